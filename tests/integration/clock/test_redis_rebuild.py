"""The clock's Redis rebuild and its races, in-process on real Redis and PostgreSQL.

A loss is every key under the backend's prefix gone at once, as an empty Redis shows it. Replicas
are in-process stores on one prefix and one schema. Races: two replicas rebuilding at once; a
write to the lost Redis whose copy comes after the rebuild read PostgreSQL; a write between the
loss and the rebuild; a rebuild another one took over; a consumer's batch in flight across a loss.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from arbiter.clocks import Verdict, VerdictKind
from arbiter.kit.kafka import ensure_topics
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side, Termination
from services.clock.clocked_game import Status, restore_of
from services.clock.flags import FlagPoller
from services.clock.handlers import ClockHandlers
from services.clock.hot import HotStateLost, LiveRow, LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.rebuild import HotRebuild
from services.clock.store import CorrespondenceStore, LiveCopies
from tests.integration.clock.conftest import ClockBackend, clock_backend, flagged, move, running_out, started


async def lose(backend: ClockBackend) -> None:
    """Every key of the backend's prefix gone, as after Redis was killed and started again empty."""
    keys = [key async for key in backend.redis.scan_iter(f"{backend.prefix}:*")]
    if keys:
        await backend.redis.delete(*keys)


def replica(backend: ClockBackend) -> tuple[LiveStore, HotRebuild, ClockMetrics]:
    """One replica's live store, wired to rebuild Redis from PostgreSQL when it is lost."""
    metrics = ClockMetrics.create(Metrics("clock"))
    live = LiveStore(backend.redis, backend.prefix, 60_000, 60_000)
    rebuild = HotRebuild(live, CorrespondenceStore(backend.pool, live), backend.pool, metrics,
                         over_ttl_ms=60_000, rebuild_over_ms=60_000, lease_ms=60_000)
    return live, rebuild, metrics


def rebuilds(metrics: ClockMetrics) -> float:
    """Rebuilds after a loss this replica made."""
    return metrics.hot_rebuilds.labels("clock", "clocks")._value.get()


def now_ms() -> int:
    return TimeSource().now_ms()


async def test_two_replicas_rebuild_once_and_write_under_one_epoch(infra_env) -> None:
    async with clock_backend(infra_env, "twice") as backend:
        (a, a_rebuild, a_metrics), (b, b_rebuild, b_metrics) = replica(backend), replica(backend)
        await a_rebuild.recover()
        await b_rebuild.recover()
        now = now_ms()
        records = [running_out(f"twice-{n}", now, 600_000 + n) for n in range(300)]
        copies: list[LiveRow] = []
        assert all(await a.save_many(records, copies=copies))
        await LiveCopies(backend.pool, backend.prefix).save(copies)

        await lose(backend)
        await asyncio.gather(a_rebuild.recover(), b_rebuild.recover())

        assert rebuilds(a_metrics) + rebuilds(b_metrics) == 1
        assert a.epoch == b.epoch == await a.current_epoch()
        assert await backend.redis.zcard(f"{backend.prefix}:deadlines") == 300
        back = await b.load_many([r.game_id for r in records])
        for record in records:
            restored = back[record.game_id]
            assert restored is not None and restored.version == record.version and restored.clock == record.clock
        # Both write again, each from what the other wrote.
        assert all(await b.save_many([back["twice-0"]]))
        again = await a.load("twice-0")
        assert again is not None and all(await a.save_many([again]))


async def test_a_batch_written_to_the_lost_redis_is_refused_by_postgresql(infra_env) -> None:
    async with clock_backend(infra_env, "fence") as backend:
        (a, a_rebuild, _), (b, b_rebuild, _) = replica(backend), replica(backend)
        await a_rebuild.recover()
        await b_rebuild.recover()
        copies = LiveCopies(backend.pool, backend.prefix)
        record = running_out("fence-1", now_ms(), 600_000)
        first: list[LiveRow] = []
        assert all(await a.save_many([record], copies=first))
        await copies.save(first)
        before = await a.load("fence-1")
        # A's next batch reaches Redis, Redis is lost before its copy, and B rebuilds from PostgreSQL.
        record.ply = 1
        late: list[LiveRow] = []
        assert all(await a.save_many([record], copies=late))
        await lose(backend)
        await b_rebuild.recover()
        with pytest.raises(HotStateLost):
            await copies.save(late)
        # Redis and PostgreSQL agree on the record as it was before the lost batch, which is handled again.
        rebuilt = await b.load("fence-1")
        assert rebuilt is not None and before is not None
        assert (rebuilt.version, rebuilt.ply) == (before.version, 0)
        stored = await copies.load("fence-1")
        assert stored is not None and stored.version == int(before.version)


async def test_no_write_lands_between_the_loss_and_the_rebuild(infra_env) -> None:
    async with clock_backend(infra_env, "between") as backend:
        a, a_rebuild, a_metrics = replica(backend)
        await a_rebuild.recover()
        epoch = a.epoch
        record = running_out("between-1", now_ms(), 600_000)
        copies: list[LiveRow] = []
        assert all(await a.save_many([record], copies=copies))
        await LiveCopies(backend.pool, backend.prefix).save(copies)
        stored_version = record.version

        await lose(backend)
        record.ply = 1
        # The write finds no epoch: nothing is written, Redis is rebuilt first, the writer reads again.
        assert await a.save_many([record]) == [False]
        assert rebuilds(a_metrics) == 1 and a.epoch != epoch
        reread = await a.load("between-1")
        assert reread is not None and reread.version == stored_version and reread.ply == 0
        reread.ply = 1
        assert all(await a.save_many([reread]))


async def test_a_rebuild_taken_over_writes_nothing_more(infra_env) -> None:
    async with clock_backend(infra_env, "takeover") as backend:
        (a, a_rebuild, _), (b, _, _) = replica(backend), replica(backend)
        await a_rebuild.recover()
        copies = LiveCopies(backend.pool, backend.prefix)
        rows: list[LiveRow] = []
        assert all(await a.save_many([running_out("takeover-1", now_ms(), 600_000)], copies=rows))
        await copies.save(rows)
        entry = restore_of((await copies.lookup(["takeover-1"]))[1]["takeover-1"])
        assert entry is not None
        await lose(backend)
        await a.begin_rebuild("token-a", 60_000)
        await b.begin_rebuild("token-b", 60_000)  # a second rebuild (the first one's replica stalled)
        with pytest.raises(HotStateLost):
            await a.rebuild_copies("token-a", [entry])
        assert not await a.end_rebuild("token-a", "epoch-a")
        assert await b.rebuild_copies("token-b", [entry]) == 1
        assert await b.end_rebuild("token-b", "epoch-b")
        assert await b.current_epoch() == "epoch-b"


async def test_a_decided_game_lost_with_redis_is_published_once_after_the_rebuild(infra_env) -> None:
    async with clock_backend(infra_env, "decided") as backend:
        clock = TimeSource()
        live, rebuild, _ = replica(backend)
        await rebuild.recover()
        now = now_ms()
        record = running_out("decided-1", now, -1_000)  # ran out a second ago
        verdict = Verdict(VerdictKind.FLAGGED, Side.WHITE, Termination.NEVER_SAT, True, now - 1_000)
        record.status, record.verdict = Status.DECIDED, verdict
        # A replica decided it in Redis and copied it with its verdict, then Redis was lost before
        # the game was over there.
        copies: list[LiveRow] = []
        assert all(await live.save_many([record], copies=copies))
        await LiveCopies(backend.pool, backend.prefix).save(copies)
        await lose(backend)
        poller = FlagPoller(live, CorrespondenceStore(backend.pool, live), backend.pool, Outbox("clock", clock), clock,
                            ClockMetrics.create(Metrics("clock")), backend.settings)
        await poller.fire_due()  # the claim finds the epoch gone: Redis is rebuilt, the game is due again
        await poller.fire_due()
        await flagged(backend.pool, "decided-1")
        event = await backend.pool.fetchval("SELECT count(*) FROM outbox WHERE event_id = 'flag:decided-1'")
        assert event == 1
        over = await live.load("decided-1")
        assert over is not None and over.status is Status.OVER and over.verdict == verdict


class LosingCopies(LiveCopies):
    """PostgreSQL's copy, with Redis lost (and rebuilt by another replica) just before a chosen batch's copy."""

    def __init__(self, backend: ClockBackend, other: HotRebuild) -> None:
        super().__init__(backend.pool, backend.prefix)
        self.backend = backend
        self.other = other
        self.armed = False

    async def save(self, rows, connection=None) -> None:  # type: ignore[no-untyped-def]
        if self.armed and rows:
            self.armed = False
            await lose(self.backend)
            await self.other.recover()
        await super().save(rows, connection)


async def test_a_batch_in_flight_across_a_loss_is_handled_again_as_if_nothing_happened(infra_env) -> None:
    async with clock_backend(infra_env, "inflight") as backend:
        await ensure_topics(backend.settings.kafka_bootstrap_servers, 1)
        a, a_rebuild, _ = replica(backend)
        _, b_rebuild, _ = replica(backend)
        await a_rebuild.recover()
        await b_rebuild.recover()
        copies = LosingCopies(backend, b_rebuild)
        time = TimeSource()
        metrics = Metrics("clock")
        publisher = StatePublisher(backend.settings.kafka_bootstrap_servers, "clock-inflight-test", metrics)
        await publisher.start()
        try:
            handlers = ClockHandlers(a, CorrespondenceStore(backend.pool, a), copies, Outbox("clock", time), publisher,
                                     time, ClockMetrics.create(metrics))
            start = datetime.now(UTC) - timedelta(seconds=30)
            games = [f"inflight-{n}" for n in range(40)]
            await handlers.on_started([started(game_id, start) for game_id in games])
            await handlers.on_moves([move(game_id, 1, start + timedelta(seconds=2)) for game_id in games])
            second = [move(game_id, 2, start + timedelta(seconds=5)) for game_id in games]
            copies.armed = True
            with pytest.raises(HotStateLost):
                await handlers.on_moves(second)
            await handlers.on_moves(second)  # Kafka delivers the batch again
            await handlers.on_moves([move(game_id, 3, start + timedelta(seconds=9)) for game_id in games])
        finally:
            await publisher.stop()
        records = await a.load_many(games)
        for game_id in games:
            record = records[game_id]
            assert record is not None and record.ply == 3 and record.clock is not None
            # White spent 2 s then 4 s, black 3 s: as if Redis had never been lost.
            assert (record.clock.white.remaining_ms, record.clock.black.remaining_ms) == (594_000, 597_000)
        stored = await copies.lookup(games)
        assert {copy.version for copy in stored[1].values()} == {int(records[games[0]].version)}


async def test_after_a_rebuild_redis_holds_what_postgresql_holds(infra_env) -> None:
    async with clock_backend(infra_env, "exact") as backend:
        live, rebuild, _ = replica(backend)
        await rebuild.recover()
        copies = LiveCopies(backend.pool, backend.prefix)
        now = now_ms()
        kept, ahead, uncopied = (running_out(f"exact-{name}", now, 600_000) for name in ("kept", "ahead", "uncopied"))
        rows: list[LiveRow] = []
        assert all(await live.save_many([kept, ahead], copies=rows))
        await copies.save(rows)
        # Written to Redis by batches whose copies never landed (they are handled again after the rebuild).
        ahead.ply = 1
        assert all(await live.save_many([ahead, uncopied]))
        # The epoch alone is lost (deleted, evicted): Redis still holds those writes.
        await backend.redis.delete(live.epoch_key)
        await rebuild.recover()
        back = await live.load_many(["exact-kept", "exact-ahead", "exact-uncopied"])
        assert back["exact-kept"] is not None and back["exact-kept"].version == kept.version
        assert back["exact-ahead"] is not None and back["exact-ahead"].ply == 0
        assert back["exact-uncopied"] is None
        assert await backend.redis.zscore(f"{backend.prefix}:deadlines", "exact-uncopied") is None
