"""The services' Redis client: redis-py's asyncio client, its commands packed by hiredis."""

from __future__ import annotations

from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection, parse_url


class HiredisPacking(AbstractConnection):
    """Packs each command in one call to hiredis instead of redis-py's asyncio loop in Python.

    The services' scripts take thousands of arguments per batch (every seat of a round's games,
    every clock of a batch), and redis-py's asyncio connection packs them one by one in Python,
    about 1 µs each: a twentieth of the pairing service's CPU in a whole round's burst (issue 9
    note). hiredis does it in C, in a tenth of the time, into one buffer. The bytes are the same.
    redis-py's own HiredisRespSerializer (its sync client's) copies every argument through a
    generator first and took half again as long.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        """The command in the Redis protocol: what redis-py sends, packed in C."""
        # A command name with its subcommand ("CLIENT SETNAME") goes out as two words, as redis-py sends it.
        if isinstance(args[0], str):
            args = (*args[0].encode().split(), *args[1:])
        elif b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            # hiredis takes str, bytes, int and float only: redis-py's packing takes a memoryview and
            # refuses a bool with its own error.
            return super().pack_command(*args)


def _packing(connection_class: type[AbstractConnection]) -> type[AbstractConnection]:
    """`connection_class` (TCP, TLS or unix socket, as the URL says) packing with hiredis."""
    return type(f"HiredisPacking{connection_class.__name__}", (HiredisPacking, connection_class), {})


def connect_redis(url: str, **options: Any) -> aioredis.Redis:
    """A client of the Redis at `url` (redis://, rediss:// or unix://) whose connections pack with hiredis."""
    settings = {**options, **parse_url(url)}
    connection_class = settings.pop("connection_class", aioredis.Connection)
    pool = aioredis.ConnectionPool(connection_class=_packing(connection_class), **settings)
    return aioredis.Redis.from_pool(pool)
