"""Clock service: what the PostgreSQL copy of live clocks costs per batch, and how long a rebuild of Redis takes.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (REDIS_URL / DATABASE_URL when given, else a throwaway redis-server
   and the machine's or an embedded PostgreSQL, on a fresh database) and the clock's schema;
2. save `--games` running games in Redis through the clock's store, `--batch` per call, and copy
   each batch to PostgreSQL as the move handler does (one statement per batch): the copy's time
   per batch and per game;
3. move every game once more, the same way (updates of existing copies, as moves are);
4. `--runs` times: delete the clock's keys (a Redis restarted empty), and time `HotRebuild.recover`,
   which the clock's writes wait for after a loss; then check every game came back.

    .venv/bin/python tests/bench/bench_clock_rebuild.py [--games 10000] [--batch 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

import asyncpg
import redis.asyncio as aioredis

from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.metrics import Metrics
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side
from arbiter_tools.devstack.stack import SystemStack, scratch_stack
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind
from services.clock.hot import LiveRow, LiveStore
from services.clock.main import MIGRATIONS
from services.clock.metrics import ClockMetrics
from services.clock.rebuild import HotRebuild
from services.clock.store import CorrespondenceStore, LiveCopies


def running_game(game_id: str, now_ms: int) -> ClockedGame:
    """A started blitz game, both players present."""
    record = ClockedGame(game_id)
    meta = GameMeta(white_id=f"{game_id}-w", black_id=f"{game_id}-b", variant="international", kind=Kind.FISCHER,
                    base_s=180, increment_s=2, requested=True, competition_kind=2, competition_id="bench", round=1)
    ops.on_requested(record, meta, now_ms)
    ops.on_started(record, meta, now_ms, now_ms)
    record.presence[Side.WHITE].seen = record.presence[Side.BLACK].seen = True
    return record


async def save_in_batches(live: LiveStore, copies: LiveCopies, records: list[ClockedGame], batch: int) -> list[float]:
    """Save `records` in Redis and copy them to PostgreSQL, `batch` per call; the copy's seconds per batch."""
    times = []
    for start in range(0, len(records), batch):
        rows: list[LiveRow] = []
        saved = await live.save_many(records[start:start + batch], remember=True, copies=rows)
        assert all(saved)
        began = time.perf_counter()
        await copies.save(rows)
        times.append(time.perf_counter() - began)
    return times


def report(what: str, times: list[float], batch: int) -> None:
    """Print the copy's time per batch and per game."""
    median = statistics.median(times)
    print(f"{what}: {len(times)} batches of {batch}: copy median {median * 1000:.1f} ms per batch "
          f"({median / batch * 1e6:.1f} us per game), max {max(times) * 1000:.1f} ms")


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    """Copy, move, then lose Redis and time the rebuilds."""
    schema = "clock"
    prefix = f"clock-bench-{uuid.uuid4().hex[:6]}"
    pool: asyncpg.Pool = await create_pool(stack.database_url, schema, max_size=4)
    redis = aioredis.from_url(stack.redis_url)
    try:
        await migrate(pool, schema, migrations_in(MIGRATIONS, schema))
        live = LiveStore(redis, prefix, 86_400_000, 3_600_000)
        metrics = ClockMetrics.create(Metrics("clock"))
        rebuild = HotRebuild(live, CorrespondenceStore(pool, live), pool, metrics, over_ttl_ms=86_400_000,
                             rebuild_over_ms=600_000, lease_ms=60_000)
        await rebuild.recover()
        copies = LiveCopies(pool, prefix)
        now = TimeSource().now_ms()
        records = [running_game(f"rebuild-{n}", now) for n in range(args.games)]
        report("new games (inserts)", await save_in_batches(live, copies, records, args.batch), args.batch)
        for record in records:
            ops.apply_move(record, record.meta.white_id, 1, now + 1_000, now + 1_000)
        report("one move each (updates)", await save_in_batches(live, copies, records, args.batch), args.batch)
        for run_index in range(1, args.runs + 1):
            keys = [key async for key in redis.scan_iter(f"{prefix}:*", count=10_000)]
            for start in range(0, len(keys), 10_000):
                await redis.delete(*keys[start:start + 10_000])
            wall, cpu = time.perf_counter(), time.process_time()
            await rebuild.recover()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            back = await live.load_many([record.game_id for record in records])
            whole = all(back[r.game_id] is not None and back[r.game_id].ply == 1 for r in records)
            deadlines = await redis.zcard(f"{prefix}:deadlines")
            print(f"rebuild {run_index}: {args.games} live games in {wall * 1000:.0f} ms "
                  f"({wall / args.games * 1e6:.1f} us per game; this process {cpu / args.games * 1e6:.1f} us CPU "
                  f"per game); every game back: {whole}, deadlines {deadlines}")
    finally:
        await redis.aclose()
        await pool.close()


def main() -> None:
    """Start the infrastructure, run the benchmark, print the figures, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with scratch_stack("bench-clock-rebuild-") as stack:
        asyncio.run(run(args, stack))


if __name__ == "__main__":
    main()
