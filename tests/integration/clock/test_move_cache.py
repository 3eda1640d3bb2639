"""The move path's unread copies, on real Redis: a copy another replica made stale is never trusted.

A replica applies a batch of moves to the records it saved last without reading them again; the
compare-and-set of the save is what checks them. Two in-process replicas share one Redis: each
one's copies go stale whenever the other changes a game, and every move must still land once.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.kafka import ensure_topics
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from services.clock.handlers import ClockHandlers
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.store import CorrespondenceStore, LiveCopies
from tests.integration.clock.conftest import live_store, move, started

MIGRATIONS = Path(__file__).resolve().parents[3] / "services" / "clock" / "migrations"


@pytest.fixture
async def replicas(infra_env):  # type: ignore[no-untyped-def]
    """Two clock-service replicas (handlers, stores, publishers) on one Redis prefix."""
    schema = f"clock_cache_{uuid.uuid4().hex[:8]}"
    prefix = f"clock-cache-{uuid.uuid4().hex[:8]}"
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    await ensure_topics(bootstrap, 1)
    pool = await create_pool(infra_env["DATABASE_URL"], schema, min_size=1, max_size=2)
    await migrate(pool, schema, migrations_in(MIGRATIONS, "clock"))
    redis = aioredis.from_url(infra_env["REDIS_URL"])
    time = TimeSource()
    made: list[tuple[ClockHandlers, StatePublisher]] = []
    for n in range(2):
        metrics = Metrics("clock")
        clock_metrics = ClockMetrics.create(metrics)
        live = await live_store(pool, redis, prefix, clock_metrics)
        publisher = StatePublisher(bootstrap, f"clock-cache-test-{n}", metrics)
        await publisher.start()
        handlers = ClockHandlers(live, CorrespondenceStore(pool, live), LiveCopies(pool, prefix), Outbox("clock", time),
                                 publisher, time, clock_metrics)
        made.append((handlers, publisher))
    try:
        yield [handlers for handlers, _ in made]
    finally:
        for _, publisher in made:
            await publisher.stop()
        keys = [key async for key in redis.scan_iter(f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        async with pool.acquire() as connection:
            await connection.execute(f"DROP SCHEMA {schema} CASCADE")
        await pool.close()


def presence(game_id: str, player: str, online: bool, at: datetime) -> ev.PlayerPresenceChanged:
    event = ev.PlayerPresenceChanged(game_id=game_id, player_id=player, online=online)
    event.at.FromDatetime(at)
    return event


async def test_moves_land_once_whatever_the_other_replica_did_meanwhile(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b = replicas
    game = f"cache-{uuid.uuid4().hex[:8]}"
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    await a.on_started([started(game, t0)])  # a saved it last: its next batch reads nothing
    await b.on_moves([move(game, 1, t0 + timedelta(seconds=1))])
    # a's copy is at ply 0, white to move: black's move looks like the wrong turn until a reads again.
    assert await a.on_moves([move(game, 2, t0 + timedelta(seconds=2))]) == "handled"
    record = await a.live.load(game)
    assert record is not None and record.ply == 2 and record.clock is not None
    assert record.clock.white.moves == 1 and record.clock.black.moves == 1

    # b's copy is now stale by a's save; b changes the game without a move (presence), then a moves
    # on its own copy: the compare-and-set refuses it, a reads again, and b's change is kept.
    await b.on_presence([presence(game, f"{game}-b", False, t0 + timedelta(seconds=3))])
    assert await a.on_moves([move(game, 3, t0 + timedelta(seconds=4))]) == "handled"
    record = await b.live.load(game)
    assert record is not None and record.ply == 3
    assert record.offline_since_ms(record.clock.to_move) is not None, "b's presence change was kept"  # type: ignore[union-attr]

    # A redelivered move is stale on a fresh read as on a cached copy: nothing changes.
    assert await a.on_moves([move(game, 3, t0 + timedelta(seconds=4))]) == "ignored"
    assert await b.on_moves([move(game, 2, t0 + timedelta(seconds=2))]) == "ignored"
    again = await a.live.load(game)
    assert again is not None and again.ply == 3 and again.clock == record.clock


def requested(game_id: str) -> ev.GameRequested:
    event = ev.GameRequested(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                             variant="international", rated=True)
    event.time_control.fischer.base_seconds = 600
    return event


async def test_a_waiting_game_copy_misses_no_move_parked_elsewhere(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b = replicas
    game = f"cache-{uuid.uuid4().hex[:8]}"
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    await a.on_requested([requested(game)])  # a keeps its copy of the waiting game (no parked move)
    # b parks white's first move: a's copy knows nothing of it, and its start must still apply it.
    await b.on_moves([move(game, 1, t0 + timedelta(seconds=1))])
    await a.on_started([started(game, t0)])
    record = await b.live.load(game)
    assert record is not None and record.ply == 1 and record.clock is not None
    assert record.clock.white.moves == 1 and not record.early_moves
    assert not await b.live.redis.exists(b.live.early_key(game)), "the parked move was consumed"

    # The same replica parking then starting: the parked move comes back with the read.
    other = f"cache-{uuid.uuid4().hex[:8]}"
    await a.on_requested([requested(other)])
    await a.on_moves([move(other, 1, t0 + timedelta(seconds=1))])
    await a.on_started([started(other, t0)])
    assert await a.on_finished([ev.GameFinished(game_id=other)]) == "handled"
    record = await b.live.load(other)
    assert record is not None and record.ply == 1 and record.clock is not None and record.clock.white.moves == 1
    assert record.status.value == "over"


async def test_a_request_written_unread_never_overwrites_a_stored_game(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b = replicas
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    # GameStarted and a move overtook GameRequested (topics are unordered), on the other replica.
    game = f"cache-{uuid.uuid4().hex[:8]}"
    await b.on_started([started(game, t0)])
    await b.on_moves([move(game, 1, t0 + timedelta(seconds=1))])
    await a.on_requested([requested(game)])
    record = await b.live.load(game)
    assert record is not None and record.status.value == "running" and record.ply == 1
    assert record.meta.requested and record.meta.rated, "the request's facts were merged into the stored game"

    # A move parked before any GameRequested: the request finds it, the start applies it.
    early = f"cache-{uuid.uuid4().hex[:8]}"
    await b.on_moves([move(early, 1, t0 + timedelta(seconds=1))])
    await a.on_requested([requested(early)])
    await a.on_started([started(early, t0)])
    record = await b.live.load(early)
    assert record is not None and record.ply == 1 and record.clock is not None and record.clock.white.moves == 1

    # A redelivered GameRequested of a finished game changes nothing.
    await a.on_finished([ev.GameFinished(game_id=game)])
    await b.on_requested([requested(game)])
    record = await a.live.load(game)
    assert record is not None and record.status.value == "over" and record.ply == 1


async def test_events_without_a_game_id_are_counted_and_do_not_stop_the_rest(replicas) -> None:  # type: ignore[no-untyped-def]
    """A MoveMade or a presence change naming no game changes nothing and never fails its batch."""
    a, _ = replicas
    game = f"cache-{uuid.uuid4().hex[:8]}"
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    await a.on_started([started(game, t0)])
    assert await a.on_moves([move("", 1, t0), move(game, 1, t0 + timedelta(seconds=1))]) == "handled"
    assert await a.on_presence([presence("", "someone", False, t0), presence(game, f"{game}-b", True, t0)]) == "handled"
    record = await a.live.load(game)
    assert record is not None and record.ply == 1
    registry = a.publisher.metrics.registry  # the kit's Metrics the clock's series are registered on
    assert registry.get_sample_value("arbiter_clock_moves_total", {"service": "clock", "outcome": "invalid"}) == 1
    assert registry.get_sample_value("arbiter_clock_events_total",
                                     {"service": "clock", "kind": "presence", "outcome": "invalid"}) == 1
    # Read straight from the store: an empty id beside a real one is one value each, not a shifted reply.
    loaded = await a.live.load_many(["", game])
    assert loaded[""] is None and loaded[game] is not None and loaded[game].ply == 1


async def test_copies_are_kept_for_running_games_only(replicas) -> None:  # type: ignore[no-untyped-def]
    """A finished game's copy is dropped: the store keeps live games, not every game of the day."""
    a, _ = replicas
    running, finished = (f"cache-{uuid.uuid4().hex[:8]}" for _ in range(2))
    t0 = datetime.now(UTC) - timedelta(seconds=30)
    await a.on_started([started(running, t0), started(finished, t0)])
    assert await a.on_finished([ev.GameFinished(game_id=finished)]) == "handled"
    kept = a.live.take_known([running, finished])
    assert set(kept) == {running}
    # Read again from Redis, the finished game is whole; redelivering its end changes nothing.
    record = await a.live.load(finished)
    assert record is not None and record.status.value == "over"
    assert await a.on_finished([ev.GameFinished(game_id=finished)]) == "duplicate"
