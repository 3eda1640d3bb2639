"""The services' Redis clients against a real server: commands, scripts of thousands of arguments, pipelines,
pools whose callers wait for a connection, a named pool per kind of user."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.exceptions import MaxConnectionsError

from arbiter.kit.redisclient import HiredisPacking, RedisPools, connect_redis
from tests.support.polling import eventually

_ECHO_ARGUMENTS = "return {#KEYS, ARGV[1], ARGV[#ARGV], redis.call('GET', KEYS[1])}"


async def test_commands_scripts_and_pipelines_reach_redis_intact(redis_url: str) -> None:
    client = connect_redis(redis_url, decode_responses=False)
    prefix = f"test-redis-client-{uuid.uuid4().hex[:6]}:"
    try:
        await client.set(prefix + "name", "Jérôme Ĳsbrand ♛")
        assert await client.get(prefix + "name") == "Jérôme Ĳsbrand ♛".encode()
        assert issubclass(client.connection_pool.connection_class, HiredisPacking)
        # A round's worth of seats in one script call, as the busy registry sends them.
        seats = [f"player-{n:05d}" for n in range(12_000)]
        count, first, last, stored = await client.register_script(_ECHO_ARGUMENTS)(
            keys=[prefix + "name", prefix + "other"], args=seats)
        assert (count, first, last, stored) == (2, b"player-00000", b"player-11999", "Jérôme Ĳsbrand ♛".encode())
        async with client.pipeline(transaction=True) as pipe:
            for n in range(500):
                pipe.hset(prefix + "clocks", f"game-{n}", n * 1.5)
            pipe.hlen(prefix + "clocks")
            replies = await pipe.execute()
        assert replies[-1] == 500
        assert await client.hget(prefix + "clocks", "game-499") == b"748.5"
    finally:
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def _blocked_pop(client, key: str) -> bytes:
    """Holds one of the client's connections until something is pushed to `key`."""
    _, value = await client.blpop([key], timeout=0)
    return value


async def test_a_full_pool_makes_callers_wait_for_a_connection_instead_of_failing(redis_url: str) -> None:
    client = connect_redis(redis_url, max_connections=2, wait_seconds=30)
    pusher = connect_redis(redis_url)
    prefix = f"test-pool-{uuid.uuid4().hex[:6]}:"
    try:
        holders = [asyncio.create_task(_blocked_pop(client, prefix + str(n))) for n in range(3)]
        # Two hold the pool's two connections; the third waits for one (redis-py's own pool refused it).
        await eventually(lambda: client.connection_pool.in_use == 2 and len(client.connection_pool._waiters) == 1)
        assert not any(holder.done() for holder in holders)
        for n in range(3):
            await pusher.rpush(prefix + str(n), f"value-{n}")
        assert await asyncio.gather(*holders) == [b"value-0", b"value-1", b"value-2"]
        assert client.connection_pool.in_use == 0
    finally:
        await client.aclose()
        await pusher.aclose()


async def test_a_caller_waits_no_longer_than_the_pool_says_and_a_cancelled_one_passes_its_turn_on(
    redis_url: str,
) -> None:
    client = connect_redis(redis_url, max_connections=1, wait_seconds=0.2, client_name="test-pool-one")
    pusher = connect_redis(redis_url)
    key = f"test-pool-{uuid.uuid4().hex[:6]}"
    try:
        holder = asyncio.create_task(_blocked_pop(client, key))
        await eventually(lambda: client.connection_pool.in_use == 1)
        with pytest.raises(MaxConnectionsError,
                           match=r"all 1 connections of the Redis pool test-pool-one stayed in use for 0.2 s"):
            await client.get(key)
        client.connection_pool.wait_seconds = 30
        cancelled = asyncio.create_task(client.get(key))
        waiting = asyncio.create_task(client.incr(key + ":count"))
        await eventually(lambda: len(client.connection_pool._waiters) == 2)
        # Cancelled as the holder gives its connection back, the first waiter never takes it: the second does.
        holder.add_done_callback(lambda _: cancelled.cancel())
        await pusher.rpush(key, "go")
        assert await holder == b"go"
        assert await waiting == 1
        assert cancelled.cancelled()
    finally:
        await client.delete(key + ":count")
        await client.aclose()
        await pusher.aclose()


async def test_each_kind_of_user_has_its_own_named_pool(redis_url: str) -> None:
    pools = RedisPools(redis_url, f"test{uuid.uuid4().hex[:6]}", wait_seconds=1)
    try:
        requests, background = pools.pool("requests", 3), pools.pool("background", 2)
        assert pools.pool("requests", 3) is requests
        with pytest.raises(ValueError, match="the Redis pool requests has 3 connections, not 4"):
            pools.pool("requests", 4)
        await asyncio.gather(requests.ping(), background.ping())
        names = [client["name"] for client in await requests.client_list()]
        assert pools.client_name("requests") in names and pools.client_name("background") in names
        assert pools.client_name("requests") == f"arbiter-{pools.service}-requests"
        lone = pools.connection("watch")
        await lone.connect()
        assert lone.client_name == pools.client_name("watch")
        await lone.disconnect()
    finally:
        await pools.aclose()


