"""Rating service end to end: rated games/s from game.finished through PostgreSQL to rating.updated.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (KAFKA_BOOTSTRAP_SERVERS / DATABASE_URL when given, else the
   embedded tansu and the machine's or an embedded PostgreSQL, on a fresh database) and
   the rating service as a real process, idle;
2. publish N GameFinished events as fast as one aiokafka producer goes (keyed by game id,
   so one player's games spread over every partition; `--rate` finishes a second of game
   time, each up to `--jitter` seconds out of publication order; ~10% unrated games),
   timing the producer;
3. end to end: from the first publish to the last RatingUpdated read back from
   rating.updated (two per rated game, plus re-publications after late-game replays);
4. raw consume: a bare aiokafka consumer reading and decoding the same N records, the
   ceiling the broker sets on this machine.
Target: >= 2,000 rated games/s end to end.

    .venv/bin/python tests/bench/bench_rating_service.py [--games 20000] [--players 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import ensure_topics
from arbiter_tools.devstack.infra import scratch_database
from arbiter_tools.devstack.stack import SystemStack
from services.rating.settings import RatingSettings

POOLS = (("international", cm.SPEED_BLITZ), ("international", cm.SPEED_RAPID),
         ("russian", cm.SPEED_BLITZ), ("english", cm.SPEED_BULLET))
RESULTS = (cm.GAME_RESULT_WHITE_WINS, cm.GAME_RESULT_BLACK_WINS, cm.GAME_RESULT_DRAW)


def make_games(
    n: int, players: int, rate: float, jitter: float, rng: random.Random
) -> tuple[list[ev.GameFinished], int]:
    """N GameFinished events finishing ~now, and how many of them are rated."""
    names = [f"bench-p{i:05d}" for i in range(players)]
    base = datetime.now(UTC)
    games, rated = [], 0
    for i in range(n):
        white, black = rng.sample(names, 2)
        variant, speed = rng.choice(POOLS)
        unrated = rng.random() < 0.10
        event = ev.GameFinished(
            game_id=f"bench-{i:07d}", variant=variant, speed=speed, white_id=white, black_id=black,
            result=rng.choice(RESULTS), termination=cm.TERMINATION_RESIGNATION,
            white_sat=True, black_sat=not (unrated and rng.random() < 0.5),
            rated=not unrated or rng.random() < 0.5,  # a friendly game otherwise
            competition=cm.CompetitionRef(kind=cm.COMPETITION_KIND_ARENA, id="bench"),
        )
        rated += event.rated and event.white_sat and event.black_sat
        event.meta.event_id = uuid.uuid4().hex
        event.finished_at.FromDatetime(base + timedelta(seconds=i / rate - rng.random() * jitter))
        games.append(event)
    return games, rated


async def end_offsets(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        return await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()


class RangeReader:
    """Reads a topic from given offsets, counting records and noting when the first and last arrived."""

    def __init__(self, bootstrap: str, start: dict[TopicPartition, int], decode: bool) -> None:
        self.bootstrap = bootstrap
        self.start = start
        self.decode = decode
        self.read = 0
        self.opened: float | None = None
        self.last: float | None = None

    async def run(self, until: int | None, stop: asyncio.Event, timeout: float) -> None:
        """Read until `until` records (None: until `stop`) or `timeout`."""
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                    max_partition_fetch_bytes=16 << 20, fetch_max_bytes=64 << 20)
        await consumer.start()
        consumer.assign(list(self.start))
        for partition, offset in self.start.items():
            consumer.seek(partition, offset)
        self.opened = time.perf_counter()
        deadline = self.opened + timeout
        try:
            while (until is None or self.read < until) and not stop.is_set() and time.perf_counter() < deadline:
                batches = await consumer.getmany(timeout_ms=100, max_records=5000)
                for records in batches.values():
                    if self.decode:
                        for record in records:
                            ev.GameFinished.FromString(record.value)
                    self.read += len(records)
                if batches:
                    self.last = time.perf_counter()
        finally:
            await consumer.stop()


def games_counter(url: str) -> dict[str, float]:
    """arbiter_rating_games_total summed by outcome, and the revised games, from /metrics."""
    totals: dict[str, float] = {}
    for line in urllib.request.urlopen(url, timeout=5).read().decode().splitlines():
        if line.startswith("arbiter_rating_games_total{"):
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            totals[outcome] = totals.get(outcome, 0) + float(line.rsplit(" ", 1)[1])
        elif line.startswith("arbiter_rating_games_revised_total{"):
            totals["revised"] = float(line.rsplit(" ", 1)[1])
    return totals


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    rng = random.Random(args.seed)
    bootstrap = stack.kafka_bootstrap
    await ensure_topics(bootstrap, 4)
    games, rated = make_games(args.games, args.players, args.rate, args.jitter, rng)
    payloads = [(g.game_id.encode(), g.SerializeToString()) for g in games]
    in_start = await end_offsets(bootstrap, events.GAME_FINISHED.name)
    out_start = await end_offsets(bootstrap, events.RATING_UPDATED.name)
    metrics_url = stack.services["rating"].metrics_url
    service_process = psutil.Process(stack.services["rating"].process.pid)  # type: ignore[union-attr]
    load_before = os.getloadavg()[0]

    # The reader of rating.updated runs from before the first publish.
    out = RangeReader(bootstrap, out_start, decode=False)
    done = asyncio.Event()
    out_task = asyncio.create_task(out.run(None, done, args.timeout))
    await asyncio.sleep(1.0)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=10, max_batch_size=256 << 10)
    await producer.start()
    cpu_started = sum(service_process.cpu_times()[:2])
    started = time.perf_counter()
    try:
        futures = [await producer.send(events.GAME_FINISHED.name, value, key=key) for key, value in payloads]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    produced = time.perf_counter() - started
    # Done when the service has counted every event and rating.updated holds two events per
    # rated game plus two per re-rated one (a late game's replay publishes those again).
    # /metrics is only read once the cheap necessary condition holds: scraping a busy service
    # steals its GIL and would slow down what is being measured.
    totals: dict[str, float] = {}
    while not out_task.done():
        await asyncio.sleep(0.1)
        if out.read < 2 * rated:
            continue
        totals = games_counter(metrics_url)
        counted = sum(totals.get(k, 0) for k in ("rated", "ignored", "duplicate"))
        if counted >= args.games and out.read >= 2 * (totals.get("rated", 0) + totals.get("revised", 0)):
            done.set()
    await out_task
    service_cpu = sum(service_process.cpu_times()[:2]) - cpu_started
    load_after = os.getloadavg()[0]

    # The raw ceiling: the same N records, read and decoded by a bare consumer.
    raw = RangeReader(bootstrap, in_start, decode=True)
    await raw.run(args.games, asyncio.Event(), args.timeout)

    print(f"games published        {args.games:>8}  ({rated} rated, {args.games - rated} unrated; {args.players}"
          f" players, {len(POOLS)} pools, {args.rate:g} finishes/s, {args.jitter:g} s disorder,"
          f" batches of {args.batch})")
    print(f"producer               {args.games / produced:>8.0f} events/s  ({produced:.2f} s)")
    if raw.opened is not None and raw.last is not None:
        raw_seconds = raw.last - raw.opened
        print(f"raw consume + decode   {raw.read / raw_seconds:>8.0f} events/s"
              f"  ({raw.read} records in {raw_seconds:.2f} s)")
    if not done.is_set() or out.last is None:
        print(f"end to end             incomplete within {args.timeout:.0f} s: {totals}, RatingUpdated read {out.read}")
    else:
        seconds = out.last - started
        print(f"end to end             {rated / seconds:>8.0f} rated games/s  ({args.games / seconds:.0f} events/s;"
              f" first publish -> last RatingUpdated read: {seconds:.2f} s)")
    print(f"service CPU            {service_cpu:.2f} s = {1e6 * service_cpu / max(rated, 1):.0f} us per rated game"
          f" (~{rated / max(service_cpu, 1e-9):.0f} rated games/s per core busy in the service process alone)")
    print(f"machine load           {load_before:.1f} before, {load_after:.1f} after (1-min load average,"
          f" {os.cpu_count()} cores; other work on the machine lowers the end-to-end figure)")
    print(f"service counted        rated {totals.get('rated', 0):.0f}, ignored {totals.get('ignored', 0):.0f},"
          f" duplicate {totals.get('duplicate', 0):.0f}; re-rated after a late game: {totals.get('revised', 0):.0f};"
          f" RatingUpdated read {out.read}")


def main() -> None:
    """Start the stack, run the benchmark, print the figures, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--players", type=int, default=200_000,
                        help="population (default 200,000: most play once in the run, as on a real site;"
                             " 5,000 makes each late game reach most of the later ones, the worst case)")
    parser.add_argument("--rate", type=float, default=2000.0, help="finished games per second of game time")
    parser.add_argument("--jitter", type=float, default=0.05,
                        help="finish times up to this many seconds out of publication order (default 0.05)")
    parser.add_argument("--batch", type=int, default=RatingSettings.model_fields["rating_batch_size"].default,
                        help="RATING_BATCH_SIZE of the service (default: the service's own)")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    environ = dict(os.environ)
    with scratch_database(environ, "arbiter_bench_rating"), tempfile.TemporaryDirectory(
        prefix="bench-rating-"
    ) as state, SystemStack(
        Path(state), free_ports=True, environ=environ, extra_env={"RATING_BATCH_SIZE": str(args.batch)},
        say=lambda line: print("  " + line),
    ) as stack:
        stack.start_infrastructure()
        stack.start_services(("rating",))
        stack.wait_serving(timeout=60, names=("rating",))
        asyncio.run(run(args, stack))


if __name__ == "__main__":
    main()
