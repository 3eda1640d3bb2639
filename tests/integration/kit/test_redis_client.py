"""The services' Redis client against a real server: commands, scripts of thousands of arguments, pipelines."""

from __future__ import annotations

import uuid

from arbiter.kit.redisclient import HiredisPacking, connect_redis

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
