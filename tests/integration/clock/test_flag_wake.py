"""The poller's sleep: this process's own deadlines wake it; other replicas' wait for its blind look.

In-process on real Redis and PostgreSQL. The running poller knows the nearest deadline from each
claim; a deadline this process writes later and earlier than its planned look (a GameStarted,
a move, a drop) wakes it, so the blind look between two claims can be rare. A deadline another
replica writes (a LiveStore the poller does not watch) is found at the next blind look.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg

from arbiter.clocks import Side
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from services.clock import operations as ops
from services.clock.flags import FlagPoller
from services.clock.metrics import ClockMetrics
from services.clock.model import GameMeta, GameRecord, Kind
from services.clock.records import CorrespondenceStore
from services.clock.store import LiveStore
from tests.integration.clock.conftest import ClockBackend, clock_backend


def running_out(game_id: str, now_ms: int, in_ms: int) -> GameRecord:
    """A started game whose first mover (present) runs out `in_ms` from `now_ms`."""
    record = GameRecord(game_id)
    ops.on_started(record, GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=10),
                   now_ms - 10_000 + in_ms, now_ms)
    record.presence[Side.WHITE].seen = record.presence[Side.BLACK].seen = True
    return record


@contextlib.asynccontextmanager
async def polling(poller: FlagPoller) -> AsyncIterator[None]:
    """Run `poller` in the background."""
    stop = asyncio.Event()
    task = asyncio.create_task(poller.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def live_and_poller(backend: ClockBackend, clock: TimeSource) -> tuple[LiveStore, FlagPoller]:
    """A live store on the backend's Redis prefix and a flag poller over it (one replica)."""
    live = LiveStore(backend.redis, backend.prefix, 60_000, 60_000)
    poller = FlagPoller(live, CorrespondenceStore(backend.pool, live), backend.pool, Outbox("clock", clock), clock,
                        ClockMetrics.create(Metrics("clock")), backend.settings)
    return live, poller


async def flagged(pool: asyncpg.Pool, game_id: str) -> None:
    """Wait until the flag of `game_id` is saved."""
    while not await pool.fetchval("SELECT count(*) FROM outbox WHERE event_id = $1", f"flag:{game_id}"):
        await asyncio.sleep(0.01)


async def test_a_deadline_written_here_wakes_a_poller_whose_blind_look_is_an_hour_away(infra_env) -> None:
    async with clock_backend(infra_env, "wake", flag_poll_max_seconds=3600.0) as backend:
        pool, clock = backend.pool, TimeSource()
        live, poller = live_and_poller(backend, clock)
        async with polling(poller):
            await asyncio.sleep(0.2)  # the poller has looked (nothing runs) and sleeps for an hour
            now = int(clock.timestamp() * 1000)
            assert all(await live.save_many([running_out("wake-soon", now, 300)]))
            await asyncio.wait_for(flagged(pool, "wake-soon"), 30)
            # A later deadline, then an earlier one: the poller sleeps until the first and wakes for the second.
            now = int(clock.timestamp() * 1000)
            assert all(await live.save_many([running_out("wake-later", now, 1_000)]))
            assert all(await live.save_many([running_out("wake-sooner", now, 200)]))
            await asyncio.wait_for(asyncio.gather(flagged(pool, "wake-sooner"), flagged(pool, "wake-later")), 30)


async def test_another_replicas_deadline_is_found_by_the_blind_look(infra_env) -> None:
    async with clock_backend(infra_env, "blind", flag_poll_max_seconds=0.2) as backend:
        pool, clock = backend.pool, TimeSource()
        live, poller = live_and_poller(backend, clock)
        elsewhere = LiveStore(backend.redis, backend.prefix, 60_000, 60_000)  # a replica whose poller died
        async with polling(poller):
            await asyncio.sleep(0.3)
            now = int(clock.timestamp() * 1000)
            assert all(await elsewhere.save_many([running_out("blind-other", now, 100)]))
            await asyncio.wait_for(flagged(pool, "blind-other"), 30)
