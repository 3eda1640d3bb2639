"""The services' Redis clients: redis-py's asyncio client, its commands packed by hiredis, a pool per kind of user."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection, parse_url
from redis.exceptions import MaxConnectionsError


class HiredisPacking(AbstractConnection):
    """Packs each command in one call to hiredis instead of redis-py's asyncio loop in Python.

    The services' scripts take thousands of arguments per batch (every seat of a round's games,
    every clock of a batch), and redis-py's asyncio connection packs them one by one in Python, a
    share of the pairing service's CPU in a whole round's burst. hiredis does it in C into one
    buffer, with the same bytes; redis-py's own HiredisRespSerializer (its sync client's) copies
    every argument through a generator first and is slower (tests/bench/bench_redis_packing.py).
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


class WaitingConnectionPool(aioredis.ConnectionPool):
    """A pool of at most `max_connections` whose callers wait up to `wait_seconds` for a free one.

    redis-py's own pool refuses a command at once when every connection is in use; its
    BlockingConnectionPool waits, but takes a condition lock and arms a timeout for every command,
    also when a connection is free. This one takes a free connection as redis-py's pool does and
    only waits when there is none: a burst queues for its turn instead of failing.
    """

    def __init__(self, *, wait_seconds: float, **options: Any) -> None:
        super().__init__(**options)
        self.wait_seconds = wait_seconds
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def in_use(self) -> int:
        """Connections taken from the pool right now."""
        return len(self._in_use_connections)

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> AbstractConnection:
        """A connected connection of the pool, once one is free; MaxConnectionsError after `wait_seconds`."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while True:
            try:
                return await super().get_connection()
            except MaxConnectionsError:
                deadline = loop.time() + self.wait_seconds if deadline is None else deadline
                left = deadline - loop.time()
                if left <= 0:
                    raise MaxConnectionsError(
                        f"all {self.max_connections} connections of the Redis pool "
                        f"{self.connection_kwargs.get('client_name') or ''} stayed in use for "
                        f"{self.wait_seconds:g} s"
                    ) from None
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait((waiter,), timeout=left)
            except asyncio.CancelledError:
                self._give_up(waiter)
                raise
            if not waiter.done():
                self._give_up(waiter)

    async def release(self, connection: AbstractConnection) -> None:
        """Give `connection` back and wake the longest waiting caller."""
        try:
            await super().release(connection)
        finally:
            self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _give_up(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():
            # Woken for a free connection it will not take: the next caller may have it.
            self._wake_one()
            return
        waiter.cancel()
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)


def _connection_settings(url: str, options: dict[str, Any]) -> tuple[type[AbstractConnection], dict[str, Any]]:
    settings = {**options, **parse_url(url)}
    # Pool sizes come from the service's settings, not from the URL.
    settings.pop("max_connections", None)
    settings.pop("timeout", None)
    return _packing(settings.pop("connection_class", aioredis.Connection)), settings


def connect_redis(url: str, *, max_connections: int = 100, wait_seconds: float = 0.0, **options: Any) -> aioredis.Redis:
    """A client of the Redis at `url` (redis://, rediss:// or unix://) whose connections pack with hiredis.

    At most `max_connections` at once; with all in use, a command waits up to `wait_seconds` for one.
    """
    connection_class, settings = _connection_settings(url, options)
    pool = WaitingConnectionPool(connection_class=connection_class, max_connections=max_connections,
                                 wait_seconds=wait_seconds, **settings)
    return aioredis.Redis.from_pool(pool)


def lone_connection(url: str, **options: Any) -> AbstractConnection:
    """One connection to the Redis at `url`, in no pool (connected on first use): a pub/sub reader's."""
    connection_class, settings = _connection_settings(url, options)
    return connection_class(**settings)


class RedisPools:
    """The Redis clients of one process: a pool per kind of user, so that none can take another's connections.

    Every connection is named `arbiter-<service>-<role>` (Redis CLIENT LIST shows who holds what).
    """

    def __init__(self, url: str, service: str, wait_seconds: float) -> None:
        self.url = url
        self.service = service
        self.wait_seconds = wait_seconds
        self._clients: dict[str, aioredis.Redis] = {}

    def client_name(self, role: str) -> str:
        """The name the connections of `role` carry in Redis."""
        return f"arbiter-{self.service}-{role}"

    def pool(self, role: str, max_connections: int) -> aioredis.Redis:
        """The client of `role`'s own pool of at most `max_connections`, made on the first call."""
        client = self._clients.get(role)
        if client is None:
            client = self._clients[role] = connect_redis(
                self.url, max_connections=max_connections, wait_seconds=self.wait_seconds,
                client_name=self.client_name(role), decode_responses=False,
            )
        elif client.connection_pool.max_connections != max_connections:
            raise ValueError(f"the Redis pool {role} has {client.connection_pool.max_connections} connections, "
                             f"not {max_connections}")
        return client

    def connection(self, role: str, **options: Any) -> AbstractConnection:
        """A connection of its own for `role`, in no pool."""
        return lone_connection(self.url, client_name=self.client_name(role), decode_responses=False, **options)

    async def aclose(self) -> None:
        """Close every pool."""
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
