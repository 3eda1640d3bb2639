"""Rating's GameFinished handler alone on PostgreSQL: where a batch's time goes, in order and as a whole round.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). No broker: the
handler is called as the consumer calls it, so the figures are the service's own work per batch.
One run:
1. on DATABASE_URL's server (else the machine's PostgreSQL) makes a fresh database with the
   rating schema, one schema per variant below;
2. `--rounds` rounds in which each of `--players` players plays one rated game, `--batch` games
   per call, three ways: "in order" (each batch finishes after the one before), "in order at the
   boundary" (the same, but each batch passes the consumer's boundary first as the service's
   consumer passes it: the records decoded, checked by the field rules and handed over by
   `arbiter.kit.poison.ConsumerGuard`), and "whole round"
   (the round's games finish within `--spread` seconds and arrive shuffled, as a round finishing
   at once arrives from several partitions: most batches hold games earlier than the last one
   rated); with `--full-read`, the whole round again as the handler did before it asked
   `ledger.may_change_stored`: reading every later game of the pool for each late batch; the
   variants rate the same games and take turns batch by batch, so a drift of the machine falls
   on all alike;
3. prints per variant, over the batches after the first round (every player rated by then), the
   median wall time of a batch, the handler process's CPU time and the PostgreSQL backend's
   (from /proc, when the server runs on this machine).

    .venv/bin/python tests/bench/bench_rating_handler.py [--players 10000] [--rounds 4] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from aiokafka.structs import ConsumerRecord

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.events import GAME_FINISHED
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.poison import ConsumerGuard, StoredSetAside
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.infra import scratch_database
from arbiter_tools.simulator.bench.host import process_cpu_seconds
from services.rating import handlers
from services.rating.handlers import GameFinishedHandler
from services.rating.main import MIGRATIONS
from services.rating.metrics import RatingMetrics

START = datetime(2026, 1, 1, tzinfo=UTC)
RESULTS = (cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_DRAW, cm.GAME_RESULT_BLACK_WINS)


def backend_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of a PostgreSQL backend; None when the server is not on this machine."""
    try:
        return process_cpu_seconds(pid)[1]
    except OSError:
        return None


def round_events(tag: str, players: list[str], number: int, spread: float, rng: random.Random,
                 shuffled: bool) -> list[ev.GameFinished]:
    """One round: every player in one rated blitz game, in finishing order unless `shuffled`."""
    order = rng.sample(players, len(players))
    finish = [START + timedelta(hours=number, seconds=rng.uniform(0, spread)) for _ in range(len(order) // 2)]
    finish.sort()
    events = []
    for board, at in enumerate(finish):
        event = ev.GameFinished(
            game_id=f"{tag}-r{number}-{board:06d}", variant="international", speed=cm.SPEED_BLITZ,
            white_id=order[2 * board], black_id=order[2 * board + 1], result=rng.choice(RESULTS),
            termination=cm.TERMINATION_RESIGNATION, white_sat=True, black_sat=True, rated=True,
            competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_TOURNAMENT, id=tag, round=number),
        )
        event.meta.event_id = uuid.uuid4().hex
        event.finished_at.FromDatetime(at)
        events.append(event)
    return rng.sample(events, len(events)) if shuffled else events


class Variant:
    """One way of delivering the rounds, on a schema of its own, and what its batches took."""

    def __init__(self, name: str, shuffled: bool, full_read: bool, boundary: bool = False) -> None:
        self.name = name
        self.shuffled = shuffled
        self.full_read = full_read
        self.boundary = boundary
        self.schema = f"bench_rating_{name.replace(' ', '_')}"
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.backend_cpus: list[float] = []

    async def start(self, url: str) -> None:
        """Migrate the schema and make the handler, on one connection whose backend is measured."""
        self.pool = await create_pool(url, self.schema, max_size=1, min_size=1)
        await migrate(self.pool, self.schema, migrations_in(MIGRATIONS, self.schema))
        metrics = Metrics(self.schema)
        self.handler = GameFinishedHandler(self.pool, Outbox("rating", TimeSource()), RatingMetrics.create(metrics),
                                           TimeSource())
        self.guard = ConsumerGuard("bench", metrics, StoredSetAside(self.pool, metrics), [GAME_FINISHED], 5, 0.5)
        self.backend = await self.pool.fetchval("SELECT pg_backend_pid()")

    async def rate(self, batch: list[ev.GameFinished], counted: bool) -> None:
        """One handler call, timed when `counted`."""
        undo = always_read_later_games() if self.full_read else None
        records = [as_record(offset, event) for offset, event in enumerate(batch)] if self.boundary else []
        try:
            backend_before, cpu_before = backend_cpu_seconds(self.backend), time.process_time()
            began = time.perf_counter()
            if self.boundary:
                for topic, accepted in (await self.guard.intake(records)).items():
                    await self.guard.run(topic, self.handler, accepted)
            else:
                await self.handler(batch)
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu_before
            backend_after = backend_cpu_seconds(self.backend)
        finally:
            if undo is not None:
                undo()
        # The relay's work, not the handler's: the benchmark empties the outbox itself.
        await self.pool.execute("DELETE FROM outbox")
        if counted:
            self.walls.append(wall)
            self.cpus.append(cpu)
            if backend_before is not None and backend_after is not None:
                self.backend_cpus.append(backend_after - backend_before)

    async def report(self, batch: int) -> str:
        """The medians of a counted batch, and how many games a replay re-rated."""
        revised = await self.pool.fetchval("SELECT count(*) FROM rated_games WHERE revised_at IS NOT NULL")
        wall = statistics.median(self.walls) * 1000
        # Clock ticks (10 ms) are too coarse for a median of one batch: the mean.
        backend = f"{statistics.fmean(self.backend_cpus) * 1000:5.1f} ms" if self.backend_cpus else "n/a"
        return (f"  {self.name:24s} wall {wall:6.1f} ms, handler CPU {statistics.median(self.cpus) * 1000:6.1f} ms,"
                f" PostgreSQL CPU {backend} per batch; {wall / batch * 1000:5.1f} µs per game;"
                f" games re-rated {revised}")


def as_record(offset: int, event: ev.GameFinished) -> ConsumerRecord:
    """The record the broker would deliver for `event`."""
    value = event.SerializeToString()
    return ConsumerRecord(topic=GAME_FINISHED.name, partition=0, offset=offset, timestamp=0, timestamp_type=0,
                          key=event.game_id.encode(), value=value, checksum=None,
                          serialized_key_size=len(event.game_id), serialized_value_size=len(value), headers=[])


def always_read_later_games() -> Callable[[], None]:
    """Make the handler read every later game of a late batch, as before `may_change_stored`; return the undo."""
    kept = handlers.may_change_stored
    handlers.may_change_stored = lambda *_args: True
    return lambda: setattr(handlers, "may_change_stored", kept)


async def run(url: str, args: argparse.Namespace) -> None:
    variants = [Variant("in order", False, False), Variant("in order at the boundary", False, False, boundary=True),
                Variant("whole round", True, False)]
    if args.full_read:
        variants.append(Variant("whole round full read", True, True))
    try:
        for variant in variants:
            await variant.start(url)
        players = [f"p{i:06d}" for i in range(args.players)]
        for number in range(args.rounds):
            rounds = {}
            for variant in variants:
                # The same games for every variant: each draws from the same seed, round by round.
                rng = random.Random(args.seed * 1_000 + number)
                rounds[variant.name] = round_events("bench", players, number, args.spread, rng, variant.shuffled)
            # Batch by batch in turns, so that a drift of the machine falls on every variant alike.
            for start in range(0, args.players // 2, args.batch):
                for variant in variants:
                    await variant.rate(rounds[variant.name][start:start + args.batch], counted=number > 0)
        print(f"{args.players} players, one game each per round, {args.rounds} rounds, {args.batch} games per batch;"
              f" medians over the batches after the first round, the variants taking turns batch by batch")
        for variant in variants:
            print(await variant.report(args.batch))
    finally:
        for variant in variants:
            if hasattr(variant, "pool"):
                await variant.pool.close()


def main() -> None:
    """Parse the options and run on a fresh database."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--spread", type=float, default=6.0, help="seconds of game time a round finishes within")
    parser.add_argument("--full-read", action="store_true",
                        help="also the whole round with every later game read, as before may_change_stored")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    if args.players < 2 or args.rounds < 2 or args.batch < 1:
        raise SystemExit("--players needs at least 2, --rounds at least 2, --batch at least 1")
    environ = dict(os.environ)
    with scratch_database(environ, prefix="arbiter_bench_rating_handler"):
        if "DATABASE_URL" not in environ:
            raise SystemExit("no PostgreSQL: set DATABASE_URL or start the machine's")
        asyncio.run(run(environ["DATABASE_URL"], args))


if __name__ == "__main__":
    main()
