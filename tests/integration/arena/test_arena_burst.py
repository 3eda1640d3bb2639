"""A pass over hundreds of waiting players (matching in a thread while PostgreSQL checks who is free).

The matchmaker runs here on the session's Redis and PostgreSQL, without the service around it
(no other replica pairs this arena). Redis is made stale on purpose: it still lists as waiting
a player who is in a running game and one who left. PostgreSQL has the last word.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.creators import ensure_creator_registry
from arbiter.kit.runtime import Infrastructure, connect
from services.arena import matchmaker as matchmaking
from services.arena.clients import RatingCache
from services.arena.hot import HotStore
from services.arena.lifecycle import Lifecycle
from services.arena.main import MIGRATIONS
from services.arena.matchmaker import Matchmaker
from services.arena.metrics import ArenaMetrics
from services.arena.settings import ArenaSettings
from services.arena.watch import WatchHub

# More than the matchmaker matches inline: this pass takes the overlapped path.
PLAYERS = matchmaking._THREAD_ABOVE + 50


@pytest.fixture
async def infra(infra_env: dict[str, str]) -> AsyncIterator[Infrastructure]:
    """The arena schema and clients on the session's infrastructure."""
    settings = ArenaSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, replica_id="burst-test",
    )
    infra = await connect(settings, "arena", MIGRATIONS)
    await ensure_creator_registry(infra.pool)
    try:
        yield infra
    finally:
        await infra.close()


async def running_arena(infra: Infrastructure, players: list[str]) -> str:
    """A running arena with `players` joined, written straight to PostgreSQL."""
    arena_id = f"a_burst{uuid.uuid4().hex[:8]}"
    now = infra.time_source.now()
    settings = ap.ArenaSettings(name="burst", variant="international", duration_minutes=60,
                                time_control=cm.FischerControl(base_seconds=60, increment_seconds=0), rated=True)
    async with infra.pool.acquire() as c, c.transaction():
        await c.execute(
            "INSERT INTO arenas (id, creator_id, name, variant, base_seconds, increment_seconds, speed, rated,"
            " duration_minutes, starts_at, ends_at, state, settings, created_at)"
            " VALUES ($1, $2, 'burst', 'international', 60, 0, 'bullet', true, 60, $3, $4, 'running', $5, $3)",
            arena_id, f"creator-{arena_id}", now, now + timedelta(hours=1), settings.SerializeToString(),
        )
        await c.executemany("INSERT INTO arena_players (arena_id, player_id, joined_at) VALUES ($1, $2, $3)",
                            [(arena_id, p, now) for p in players])
    return arena_id


async def test_a_large_pass_pairs_everyone_free_and_never_who_plays_or_left(infra: Infrastructure) -> None:
    hot = HotStore(infra.redis)
    matchmaker = Matchmaker(infra.pool, hot, infra.outbox, infra.time_source, RatingCache(None, 10.0),
                            WatchHub(infra.redis), Lifecycle(infra.outbox, hot, infra.time_source),
                            ArenaMetrics.create(infra.metrics), infra.settings)
    tag = uuid.uuid4().hex[:6]
    players = [f"burst{tag}-{i:03d}" for i in range(PLAYERS)]
    arena_id = await running_arena(infra, players)
    try:
        await matchmaker.rebuild(arena_id)
        assert await hot.waiting_count(arena_id) == PLAYERS
        # Behind Redis's back: two start a game (another replica paired them), one leaves.
        playing, gone = players[:2], players[2]
        now = infra.time_source.now()
        await infra.pool.execute(
            "INSERT INTO arena_games (game_id, arena_id, seq, white_id, black_id, requested_at)"
            " VALUES ($1, $2, 1, $3, $4, $5)", f"{arena_id}-1", arena_id, *playing, now)
        await infra.pool.execute("UPDATE arena_players SET active = false WHERE arena_id = $1 AND player_id = $2",
                                 arena_id, gone)

        opened = await matchmaker.pair_once(arena_id)
        opened += await matchmaker.pair_once(arena_id)

        games = await infra.pool.fetch("SELECT * FROM arena_games WHERE arena_id = $1 ORDER BY seq", arena_id)
        assert len(games) == 1 + opened
        seated = [p for g in games for p in (g["white_id"], g["black_id"])]
        # Nobody in two games; the one who left is in none.
        assert len(seated) == len(set(seated))
        assert gone not in seated
        # Everyone else free was paired: at most one is left (an odd number wait).
        free = set(players) - set(playing) - {gone}
        assert len(free - set(seated)) <= 1
        # Game numbers continue from the last one.
        assert [g["seq"] for g in games] == list(range(1, len(games) + 1))
        # Every new game has its GameRequested in the outbox, saved with it.
        rows = await infra.pool.fetch("SELECT payload FROM outbox WHERE key LIKE $1", f"{arena_id}-%")
        requested = {ev.GameRequested.FromString(r["payload"]).game_id for r in rows}
        assert requested == {g["game_id"] for g in games[1:]}
        # Redis agrees with PostgreSQL again: nobody who plays or left waits.
        waiting = {w.player_id for w in await hot.snapshot(arena_id, infra.time_source.now().timestamp()) or []}
        assert waiting == free - set(seated)
    finally:
        await infra.pool.execute("UPDATE arenas SET state = 'finished' WHERE id = $1", arena_id)
        await infra.pool.execute("DELETE FROM outbox WHERE key LIKE $1", f"{arena_id}-%")
