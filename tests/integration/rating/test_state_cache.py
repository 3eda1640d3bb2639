"""The states a rating replica keeps in memory: used only while it alone wrote the pool, never after a failed batch.

Every scenario ends in the ratings the canonical sequential replay gives (R-5), exactly.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from rating_support import finished

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.rating.ledger import replay_in_order
from services.rating import store
from services.rating.cache import StateCache
from services.rating.consumer import GameFinishedHandler, RatingMetrics
from services.rating.games import Pool, judge

BLITZ = Pool("international", cm.SPEED_BLITZ)
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAYERS = [f"sc-p{i}" for i in range(6)]
RESULTS = (cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_DRAW, cm.GAME_RESULT_BLACK_WINS)


def games(count: int, seed: int) -> list[ev.GameFinished]:
    """`count` rated blitz games among six players, a minute apart."""
    rng = random.Random(seed)
    events = []
    for i in range(count):
        white, black = rng.sample(PLAYERS, 2)
        events.append(finished(f"sc-g{seed}-{i:03d}", white, black, rng.choice(RESULTS), START + timedelta(minutes=i)))
    return events


class Replica:
    """One rating replica: its own handler, cache and state-read counts, on the shared database."""

    def __init__(self, pool: asyncpg.Pool, name: str, outbox: Outbox | None = None) -> None:
        self.metrics = RatingMetrics(Metrics(f"rating-cache-{name}"))
        self.handler = GameFinishedHandler(pool, outbox or Outbox("rating", TimeSource()), self.metrics, TimeSource(),
                                           StateCache(1000))

    def reads(self) -> dict[str, float]:
        """States taken so far, by source (memory, database)."""
        return {s.labels["source"]: s.value for family in self.metrics.states_read.collect()
                for s in family.samples if s.name.endswith("_total")}


async def assert_ratings_are_the_replay(pool: asyncpg.Pool, events: Sequence[ev.GameFinished]) -> None:
    expected = replay_in_order([game for event in events if (game := judge(event).game) is not None])
    async with pool.acquire() as connection:
        stored = await store.player_states(connection, BLITZ, PLAYERS)
    assert stored == expected


async def test_a_replica_rates_from_its_kept_states_until_another_replica_writes_the_pool(pool: asyncpg.Pool) -> None:
    first, second = Replica(pool, "first"), Replica(pool, "second")
    events = games(40, seed=1)
    await first.handler(events[0:10])
    assert first.reads() == {"database": 6}  # nothing kept yet; all six players read
    await first.handler(events[10:20])
    assert first.reads() == {"database": 6, "memory": 6}  # it alone wrote the pool since
    await second.handler(events[20:30])
    await first.handler(events[30:40])
    assert first.reads() == {"database": 12, "memory": 6}  # the second replica wrote in between
    await assert_ratings_are_the_replay(pool, events)


@pytest.mark.parametrize("shuffled", [False, True])
async def test_replicas_taking_turns_give_the_sequential_result(pool: asyncpg.Pool, shuffled: bool) -> None:
    replicas = [Replica(pool, "a"), Replica(pool, "b")]
    events = games(60, seed=2)
    rng = random.Random(3)
    # Shuffled, late games replay later ones from the stored checkpoints instead of the current states.
    delivered = rng.sample(events, len(events)) if shuffled else events
    for start in range(0, len(delivered), 5):
        await rng.choice(replicas).handler(delivered[start:start + 5])
    await assert_ratings_are_the_replay(pool, events)


class FailingOutbox(Outbox):
    """An outbox whose save fails once on request, after the batch wrote its games and states."""

    fail_next = False

    async def add(self, connection: asyncpg.Connection, *events: object, causation_id: str = "") -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("outbox save failed")
        await super().add(connection, *events, causation_id=causation_id)  # type: ignore[arg-type]


async def test_a_failed_batch_leaves_the_kept_states_as_the_database(pool: asyncpg.Pool) -> None:
    outbox = FailingOutbox("rating", TimeSource())
    replica = Replica(pool, "failing", outbox)
    events = games(30, seed=4)
    await replica.handler(events[0:10])
    outbox.fail_next = True
    with pytest.raises(RuntimeError):
        await replica.handler(events[10:20])
    # Rolled back with the batch, the version bump too: the kept states are still the stored ones.
    await replica.handler(events[20:30])
    assert replica.reads() == {"database": 6, "memory": 12}
    await assert_ratings_are_the_replay(pool, events[0:10] + events[20:30])
    await replica.handler(events[10:20])  # the failed batch delivered again, now late
    await assert_ratings_are_the_replay(pool, events)
