"""T-18's busy registry on real Redis: whole batches per script call, a late start never re-adds a player."""

from __future__ import annotations

import uuid

import redis.asyncio as aioredis

from services.pairing.busy import BusyRegistry


async def test_players_are_busy_between_start_and_finish_of_any_game(redis_url) -> None:
    client = aioredis.from_url(redis_url)
    tag = uuid.uuid4().hex[:6]
    registry = BusyRegistry(client, ttl_seconds=600)
    try:
        games = [(f"{tag}-g{i}", f"{tag}-w{i}", f"{tag}-b{i}") for i in range(1_200)]  # more than one call
        await registry.started(games)
        players = [p for _, white, black in games for p in (white, black)]
        assert await registry.busy(players + [f"{tag}-idle"]) == set(players)
        # One player in two games stays busy until both are over.
        await registry.started([(f"{tag}-extra", f"{tag}-w0", f"{tag}-other")])
        await registry.finished(games[:700])
        assert await registry.busy(players) == {p for _, w, b in games[700:] for p in (w, b)} | {f"{tag}-w0"}
        await registry.finished([(f"{tag}-extra", f"{tag}-w0", f"{tag}-other")])
        assert f"{tag}-w0" not in await registry.busy([f"{tag}-w0"])
        # A GameStarted that arrives after the game's end (another topic, another partition) is ignored.
        await registry.started(games[:3])
        assert await registry.busy([p for _, w, b in games[:3] for p in (w, b)]) == set()
        assert await registry.busy([]) == set()
    finally:
        keys = [key async for key in client.scan_iter(f"pairing:*{tag}*", count=1000)]
        for start in range(0, len(keys), 500):
            await client.delete(*keys[start:start + 500])
        await client.aclose()
