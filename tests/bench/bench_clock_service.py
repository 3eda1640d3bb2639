"""Clock service: move events/s through Kafka, game life cycles/s, and flag latency with 10,000 live clocks.

Run: .venv/bin/python tests/bench/bench_clock_service.py [--games 10000] [--moves 200000] [--clocks 10000]
     [--lifecycle-games 20000] [--paced-games 2000] [--paced-rate 2000] [--paced-seconds 20]
     [--skip-throughput] [--skip-lifecycle] [--skip-paced] [--skip-flags]

Starts the infrastructure (KAFKA_BOOTSTRAP_SERVERS / REDIS_URL / DATABASE_URL when set, else
embedded tansu, redis-server and PostgreSQL) and the clock service as a real process, then:
1. throughput: `--moves` MoveMade records of `--games` running games are produced while the
   service is stopped; a raw aiokafka consumer reads them (the baseline), then the service is
   started and consumes them (Redis compare-and-set per game, ClockState per move published).
   With 10,000 games a batch of 1,000 moves holds ~1,000 different games, as under live load
   (no per-game saving from a backlog). Rates are taken between 10% and 90% of the records
   (start-up and group join excluded; the service's counter is sampled 4 times a second and the
   crossings interpolated); the service's CPU per move is printed too, since the machine may be
   shared. Target: >= 20,000 moves/s; the ratio to raw consume is printed.
2. life cycle: `--lifecycle-games` tournament games, each a GameRequested (as the pairing service
   publishes it), a GameStarted and a GameFinished (as the simulator's instant games publish
   them: no moves), are produced while the service is stopped; the service is then started and
   the rate of games (three events each) and its CPU per game are printed, between 10% and 90%
   of the events as above. Then the same number of games is produced at `--lifecycle-rate`
   games/s (default 1,000, as the system benchmark) while the service runs, and its CPU per
   game is printed: small batches, so per-batch costs count as they do live.
3. move latency: `--paced-games` running games receive moves at `--paced-rate` moves/s for
   `--paced-seconds` while the service runs (small batches, as live); each move's latency is from
   just before its produce to its ClockState arriving at a consumer (p50, p90, p99, max).
4. flag latency: `--clocks` live clocks whose deadlines fall over `--window` seconds; latency is
   from each deadline to the ClockFlagged record arriving at a consumer (target p99 <= 100 ms),
   and the service's own histogram (deadline -> flag saved for publishing).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.partitioner import DefaultPartitioner
from prometheus_client.parser import text_string_to_metric_families

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter_tools.devstack.stack import SystemStack


def metric_sum(url: str, name: str, **labels: str) -> float:
    """The sum of every sample of `name` (matching `labels`) on a /metrics page."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def histogram_quantile(url: str, name: str, q: float) -> float | None:
    """The upper bucket bound below which a fraction `q` of a histogram's observations fall."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    buckets: list[tuple[float, float]] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == f"{name}_bucket":
                buckets.append((float(sample.labels["le"]), sample.value))
    if not buckets or buckets[-1][1] == 0:
        return None
    buckets.sort()
    total = buckets[-1][1]
    for bound, count in buckets:
        if count >= q * total:
            return bound
    return None


class Producer:
    """Produces play-site events in per-partition batches, keyed by game id."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=1 << 20)
        self.partitioner = DefaultPartitioner()

    async def start(self) -> None:
        """Connect."""
        await self.producer.start()

    async def stop(self) -> None:
        """Disconnect."""
        await self.producer.stop()

    async def send(self, topic: str, messages: list[ev.MoveMade] | list) -> None:  # type: ignore[type-arg]
        """Send `messages` (protobuf events with game_id) and wait for every acknowledgement."""
        partitions = sorted(await self.producer.partitions_for(topic))
        batches: dict[int, list] = {}  # type: ignore[type-arg]
        sends = []
        for message in messages:
            if not message.meta.event_id:
                message.meta.event_id = uuid.uuid4().hex
            key = message.game_id.encode()
            partition = self.partitioner(key, partitions, partitions)
            builders = batches.setdefault(partition, [self.producer.create_batch()])
            value = message.SerializeToString()
            if builders[-1].append(key=key, value=value, timestamp=None) is None:
                sends.append(await self.producer.send_batch(builders[-1], topic, partition=partition))
                builders[-1] = self.producer.create_batch()
                builders[-1].append(key=key, value=value, timestamp=None)
        for partition, builders in batches.items():
            sends.append(await self.producer.send_batch(builders[-1], topic, partition=partition))
        await asyncio.gather(*sends)


def postgres_processes(database_url: str) -> list[psutil.Process]:
    """The PostgreSQL server's processes when it is this run's own (embedded: its socket is in its data dir)."""
    host = parse_qs(urlsplit(database_url).query).get("host", [""])[0]
    pid_file = Path(host) / "postmaster.pid" if host else None
    if pid_file is None or not pid_file.exists():
        return []  # a shared server: its CPU is not this run's alone
    postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
    return [postmaster, *postmaster.children(recursive=True)]


def cpu_seconds(processes: list[psutil.Process]) -> float:
    """User + system CPU seconds of `processes` (and of the children they have now)."""
    total = 0.0
    seen: set[int] = set()
    for process in processes:
        for member in (process, *process.children(recursive=True)):
            if member.pid in seen:
                continue
            seen.add(member.pid)
            try:
                times = member.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
    return total


async def end_offsets(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    """The current end offset of every partition of `topic`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        await consumer.topics()
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or {0})]
        return await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()


async def raw_consume(bootstrap: str, start: dict[TopicPartition, int], count: int, decode: bool) -> float:
    """Seconds a plain aiokafka consumer takes to read `count` records from `start` (optionally decoding)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        max_partition_fetch_bytes=8 << 20,
        fetch_max_bytes=64 << 20,
    )
    await consumer.start()
    try:
        consumer.assign(list(start))
        for partition, offset in start.items():
            consumer.seek(partition, offset)
        seen = 0
        began = time.perf_counter()
        while seen < count:
            batches = await consumer.getmany(timeout_ms=200, max_records=5000)
            for records in batches.values():
                seen += len(records)
                if decode:
                    for record in records:
                        ev.MoveMade.FromString(record.value)
        return time.perf_counter() - began
    finally:
        await consumer.stop()


async def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll `predicate` until true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(what)


def started_now(ids: list[str], now: datetime) -> list[ev.GameStarted]:
    """GameStarted of hour-long games (white `<id>-w`, black `<id>-b`) started at `now`."""
    opened = []
    for game_id in ids:
        started = ev.GameStarted(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                                 variant="international")
        started.time_control.fischer.base_seconds = 3600
        started.started_at.FromDatetime(now)
        opened.append(started)
    return opened


async def finish_all(bootstrap: str, ids: list[str]) -> None:
    """Publish a drawn GameFinished of each game (white `<id>-w`, black `<id>-b`)."""
    finished = []
    for game_id in ids:
        done = ev.GameFinished(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                               result=common.GAME_RESULT_DRAW)
        done.finished_at.FromDatetime(datetime.now(UTC))
        finished.append(done)
    producer = Producer(bootstrap)
    await producer.start()
    await producer.send(events.GAME_FINISHED.name, finished)
    await producer.stop()


async def throughput(stack: SystemStack, redis: aioredis.Redis, prefix: str, games: int, moves: int) -> None:
    """Moves through the real service vs raw consume of the same records."""
    bootstrap = stack.kafka_bootstrap
    service = stack.services["clock"]
    producer = Producer(bootstrap)
    await producer.start()
    tag = uuid.uuid4().hex[:6]
    ids = [f"bench-{tag}-{n}" for n in range(games)]
    now = datetime.now(UTC)
    opened = started_now(ids, now)
    await producer.send(events.GAME_STARTED.name, opened)
    await wait_for(lambda: _live_at_least(redis, prefix, games), 120, "games started")

    process = service.process
    assert process is not None
    process.stop()  # moves pile up while the service is down
    start = await end_offsets(bootstrap, events.MOVE_MADE.name)
    per_game = moves // games
    batch = []
    began = time.perf_counter()
    stamp = datetime.now(UTC)
    for ply in range(1, per_game + 1):
        for game_id in ids:
            move = ev.MoveMade(game_id=game_id, player_id=f"{game_id}-{'w' if ply % 2 else 'b'}", ply=ply, move="x")
            move.played_at.FromDatetime(stamp + timedelta(microseconds=ply * 10))
            batch.append(move)
        if len(batch) >= 20_000:
            await producer.send(events.MOVE_MADE.name, batch)
            batch = []
    await producer.send(events.MOVE_MADE.name, batch)
    produced = per_game * games
    produce_s = time.perf_counter() - began
    await producer.stop()
    print(f"produced {produced:,} MoveMade in {produce_s:.1f} s ({produced / produce_s:,.0f}/s)")

    raw_s = await raw_consume(bootstrap, start, produced, decode=False)
    raw_decode_s = await raw_consume(bootstrap, start, produced, decode=True)
    print(f"raw aiokafka consume:            {produced / raw_s:>9,.0f} records/s")
    print(f"raw aiokafka consume + decode:   {produced / raw_decode_s:>9,.0f} records/s")

    # Sampled from the process start: consumers take records as soon as their group is joined.
    stack.start_service("clock")
    url = service.metrics_url
    cpu = psutil.Process(service.process.pid)  # type: ignore[union-attr]
    postgres = postgres_processes(stack.database_url)
    points: list[tuple[float, float]] = []
    cpu_points: list[float] = []
    pg_points: list[float] = []
    started = time.perf_counter()
    while True:
        try:
            count = metric_sum(url, "arbiter_clock_moves_total")
        except OSError:
            count = 0.0
        points.append((time.perf_counter(), count))
        times = cpu.cpu_times()
        cpu_points.append(times.user + times.system)
        pg_points.append(cpu_seconds(postgres))
        if count >= produced:
            break
        if time.perf_counter() - started > 300:
            raise TimeoutError("the service did not process the moves in 5 minutes")
        # Each scrape costs the service a /metrics page (its GIL, its CPU): a few per second,
        # with the crossing instants interpolated, measure the rate without slowing it.
        await asyncio.sleep(0.25)
    if os.environ.get("BENCH_DEBUG"):
        print(list(zip(points, cpu_points, strict=True)))
    rate = _rate_between(points, 0.1 * produced, 0.9 * produced)
    low = next(i for i, (_, c) in enumerate(points) if c >= 0.1 * produced)
    high = next(i for i, (_, c) in enumerate(points) if c >= 0.9 * produced)
    cpu_per_move = (cpu_points[high] - cpu_points[low]) / max(1.0, points[high][1] - points[low][1])
    pg_per_move = (pg_points[high] - pg_points[low]) / max(1.0, points[high][1] - points[low][1])
    load = os.getloadavg()[0]
    applied = metric_sum(url, "arbiter_clock_moves_total", outcome="applied")
    states = metric_sum(url, "arbiter_events_published_total", topic=events.CLOCK_STATE.name)
    first = next(t for t, c in points if c > 0)
    print(f"clock service (moves applied, one ClockState published per move): {rate:>9,.0f} moves/s "
          f"(10%..90%); all {produced:,} in {points[-1][0] - first:.1f} s after the first")
    print(f"  applied {applied:,.0f} of {produced:,}; ClockState published {states:,.0f}")
    print(f"  service CPU {cpu_per_move * 1e6:.1f} us per move (one process, one core at most: "
          f"{1 / cpu_per_move:,.0f} moves/s per core); machine load average {load:.1f} on {os.cpu_count()} cores")
    if postgres:
        print(f"  PostgreSQL CPU {pg_per_move * 1e6:.1f} us per move (its own server, all processes)")
    print(f"  ratio to raw aiokafka consume: {rate / (produced / raw_s):.2f} "
          f"(to consume + decode: {rate / (produced / raw_decode_s):.2f})")
    await finish_all(bootstrap, ids)
    # The flag part counts its own clocks from the deadline set: these games must have left it.
    await wait_for(lambda: _live_at_most(redis, prefix, 0), 120, "games finished")


def _crossing(points: list[tuple[float, float]], count: float) -> float:
    """The instant the count reached `count`, interpolated between the two samples around it."""
    index = next(i for i, (_, c) in enumerate(points) if c >= count)
    t1, c1 = points[index]
    if index == 0 or c1 == count:
        return t1
    t0, c0 = points[index - 1]
    return t0 + (t1 - t0) * (count - c0) / (c1 - c0)


def _rate_between(points: list[tuple[float, float]], low: float, high: float) -> float:
    """Records per second between the instants the count reached `low` and `high`."""
    t_low, t_high = _crossing(points, low), _crossing(points, high)
    return (high - low) / (t_high - t_low) if t_high > t_low else float("nan")


async def _live_at_least(redis: aioredis.Redis, prefix: str, count: int) -> bool:
    return int(await redis.zcard(f"{prefix}:deadlines")) >= count


async def _live_at_most(redis: aioredis.Redis, prefix: str, count: int) -> bool:
    return int(await redis.zcard(f"{prefix}:deadlines")) <= count


async def tail(bootstrap: str, topic: str) -> AIOKafkaConsumer:
    """A started consumer of every partition of `topic`, from its end now."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=5)
    await consumer.start()
    await consumer.topics()
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or {0})]
    consumer.assign(partitions)
    await consumer.seek_to_end(*partitions)
    for partition in partitions:
        await consumer.position(partition)
    return consumer


async def flag_latency(stack: SystemStack, redis: aioredis.Redis, prefix: str, clocks: int, window: float,
                       lead: float) -> None:
    """`clocks` live clocks flagging over `window` s, starting `lead` s from now."""
    bootstrap = stack.kafka_bootstrap
    url = stack.services["clock"].metrics_url
    consumer = await tail(bootstrap, events.CLOCK_FLAGGED.name)
    arrivals: dict[str, float] = {}

    async def read() -> None:
        while True:
            batches = await consumer.getmany(timeout_ms=20)
            now = time.time()
            for records in batches.values():
                for record in records:
                    flagged = ev.ClockFlagged.FromString(record.value)
                    arrivals.setdefault(flagged.game_id, now)

    reader = asyncio.create_task(read())
    tag = uuid.uuid4().hex[:6]
    ids = [f"flag-{tag}-{n}" for n in range(clocks)]
    base_s = 600
    first_deadline = time.time() + lead
    deadlines: dict[str, float] = {}
    opened, present = [], []
    for n, game_id in enumerate(ids):
        deadline = first_deadline + window * n / clocks
        started_at = datetime.fromtimestamp(deadline - base_s, UTC)
        deadlines[game_id] = round(deadline * 1000) / 1000
        started = ev.GameStarted(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b",
                                 variant="international")
        started.time_control.fischer.base_seconds = base_s
        started.started_at.FromDatetime(started_at)
        opened.append(started)
        # Black is there, so white's flag is a ClockFlagged (never sat), not a T-19 abandon.
        online = ev.PlayerPresenceChanged(game_id=game_id, player_id=f"{game_id}-b", online=True)
        online.at.FromDatetime(started_at)
        present.append(online)
    producer = Producer(bootstrap)
    await producer.start()
    await producer.send(events.PRESENCE_CHANGED.name, present)
    await producer.send(events.GAME_STARTED.name, opened)
    await producer.stop()
    baseline = int(await redis.zcard(f"{prefix}:deadlines"))
    loaded_at = None
    while time.time() < first_deadline:
        live = int(await redis.zcard(f"{prefix}:deadlines"))
        if live >= baseline + clocks - 1 and loaded_at is None:
            loaded_at = time.time()
        await asyncio.sleep(0.2)
    if loaded_at is None:
        print(f"warning: only {int(await redis.zcard(f'{prefix}:deadlines')) - baseline:,} clocks were running"
              " at the first deadline; raise --lead")
    else:
        print(f"{clocks:,} live clocks running {first_deadline - loaded_at:.1f} s before the first deadline")
    end = first_deadline + window + 30
    while len(arrivals) < clocks and time.time() < end:
        await asyncio.sleep(0.2)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await consumer.stop()
    latencies = sorted((arrivals[g] - deadlines[g]) * 1000 for g in arrivals)
    if not latencies:
        print("no flag arrived")
        return
    q = statistics.quantiles(latencies, n=100)
    print(f"flag latency, deadline -> ClockFlagged at a consumer ({len(latencies):,} of {clocks:,} flags, "
          f"{clocks / window:,.0f}/s over {window:.0f} s): p50 {q[49]:.1f} ms, p90 {q[89]:.1f} ms, "
          f"p99 {q[98]:.1f} ms, max {latencies[-1]:.1f} ms")
    p99 = histogram_quantile(url, "arbiter_clock_flag_latency_seconds", 0.99)
    p50 = histogram_quantile(url, "arbiter_clock_flag_latency_seconds", 0.50)
    if p99 is not None:
        print(f"service histogram, deadline -> flag saved (bucket bounds): p50 <= {p50 * 1000:.1f} ms, "
              f"p99 <= {p99 * 1000:.1f} ms")


async def paced_moves(stack: SystemStack, redis: aioredis.Redis, prefix: str, games: int, rate: float,
                      seconds: float) -> None:
    """Moves produced at `rate` per second to `games` running games; move -> ClockState latency at a consumer."""
    bootstrap = stack.kafka_bootstrap
    service = stack.services["clock"]
    tag = uuid.uuid4().hex[:6]
    ids = [f"latency-{tag}-{n}" for n in range(games)]
    now = datetime.now(UTC)
    opened = started_now(ids, now)
    producer = Producer(bootstrap)
    await producer.start()
    baseline = int(await redis.zcard(f"{prefix}:deadlines"))
    await producer.send(events.GAME_STARTED.name, opened)
    await wait_for(lambda: _live_at_least(redis, prefix, baseline + games), 120, "latency games started")
    consumer = await tail(bootstrap, events.CLOCK_STATE.name)
    sent: dict[tuple[str, int], float] = {}
    arrivals: dict[tuple[str, int], float] = {}
    prefix_bytes = f"latency-{tag}-".encode()

    async def read() -> None:
        while True:
            batches = await consumer.getmany(timeout_ms=20)
            at = time.perf_counter()
            for records in batches.values():
                for record in records:
                    if record.key is None or not record.key.startswith(prefix_bytes):
                        continue
                    state = ev.ClockState.FromString(record.value)
                    arrivals.setdefault((state.game_id, state.ply), at)

    reader = asyncio.create_task(read())
    cpu = psutil.Process(service.process.pid)  # type: ignore[union-attr]
    postgres = postgres_processes(stack.database_url)
    times = cpu.cpu_times()
    cpu_before = times.user + times.system
    pg_before = cpu_seconds(postgres)
    tick = 0.02
    per_tick = max(1, round(rate * tick))
    plies = dict.fromkeys(ids, 0)
    cursor = 0
    began = time.perf_counter()
    ticks = int(seconds / tick)
    for n in range(ticks):
        batch = []
        for _ in range(per_tick):
            game_id = ids[cursor % games]
            cursor += 1
            ply = plies[game_id] = plies[game_id] + 1
            move = ev.MoveMade(game_id=game_id, player_id=f"{game_id}-{'w' if ply % 2 else 'b'}", ply=ply, move="x")
            move.played_at.FromDatetime(datetime.now(UTC))
            batch.append(move)
        stamp = time.perf_counter()
        for move in batch:
            sent[(move.game_id, move.ply)] = stamp
        await producer.send(events.MOVE_MADE.name, batch)
        await asyncio.sleep(max(0.0, began + (n + 1) * tick - time.perf_counter()))
    produce_s = time.perf_counter() - began
    await producer.stop()
    deadline = time.monotonic() + 60
    while len(arrivals) < len(sent) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    times = cpu.cpu_times()
    used = times.user + times.system - cpu_before
    pg_used = cpu_seconds(postgres) - pg_before
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    await consumer.stop()
    latencies = sorted((arrivals[key] - sent[key]) * 1000 for key in sent if key in arrivals)
    load = os.getloadavg()[0]
    if len(latencies) < 2:
        print("move latency: no ClockState arrived")
        return
    q = statistics.quantiles(latencies, n=100)
    print(f"move -> ClockState at a consumer ({len(latencies):,} of {len(sent):,} moves at "
          f"{len(sent) / produce_s:,.0f}/s to {games:,} games for {produce_s:.0f} s): p50 {q[49]:.1f} ms, "
          f"p90 {q[89]:.1f} ms, p99 {q[98]:.1f} ms, max {latencies[-1]:.1f} ms")
    print(f"  service CPU {used / max(1, len(sent)) * 1e6:.1f} us per move ({used / produce_s * 100:.0f}% of a core); "
          f"machine load average {load:.1f} on {os.cpu_count()} cores")
    if postgres:
        print(f"  PostgreSQL CPU {pg_used / max(1, len(sent)) * 1e6:.1f} us per move "
              f"({pg_used / produce_s * 100:.0f}% of a core; its own server, idle work included)")
    await finish_all(bootstrap, ids)
    await wait_for(lambda: _live_at_most(redis, prefix, baseline), 120, "latency games finished")


def lifecycle_events(game_ids: list[str], tournament: str) -> tuple[list, list, list]:  # type: ignore[type-arg]
    """GameRequested, GameStarted and GameFinished of instant tournament games, with the fields real ones carry."""
    opening = common.Opening(variant="international", mode=common.OPENING_MODE_FREE,
                             fen="W:W31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50"
                                 ":B1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20")
    control = common.TimeControl(fischer=common.FischerControl(base_seconds=180, increment_seconds=2))
    ref = common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament, round=3)
    now = datetime.now(UTC)
    requested, started, finished = [], [], []
    for n, game_id in enumerate(game_ids):
        white, black = f"player-{2 * n}", f"player-{2 * n + 1}"
        request = ev.GameRequested(
            game_id=game_id, competition=ref, variant="international", white_id=white, black_id=black,
            time_control=control, speed=common.SPEED_BLITZ, rated=True, opening=opening, game_in_pairing=1,
            requested_at=events.timestamp(now),
        )
        request.meta.event_id = f"{game_id}/requested"
        events.stamp_meta(request, "pairing", now)
        requested.append(request)
        start = ev.GameStarted(
            game_id=game_id, white_id=white, black_id=black, started_at=events.timestamp(now), competition=ref,
            variant="international", time_control=control, start_fen=opening.fen,
        )
        start.meta.event_id = f"{game_id}/started"
        events.stamp_meta(start, "playsite", now)
        started.append(start)
        done = ev.GameFinished(
            game_id=game_id, competition=ref, variant="international", speed=common.SPEED_BLITZ, white_id=white,
            black_id=black, result=common.GAME_RESULT_DRAW, termination=common.TERMINATION_DRAW_AGREED,
            white_sat=True, black_sat=True, rated=True, plies=2, finished_at=events.timestamp(now),
            started_at=events.timestamp(now),
        )
        done.meta.event_id = f"{game_id}/finished"
        events.stamp_meta(done, "playsite", now)
        finished.append(done)
    return requested, started, finished


async def lifecycle(stack: SystemStack, redis: aioredis.Redis, prefix: str, games: int, profile: str = "") -> None:
    """Game life cycles (requested, started, finished; no moves) through the real service."""
    bootstrap = stack.kafka_bootstrap
    service = stack.services["clock"]
    url = service.metrics_url
    kinds = ("requested", "started", "finished")
    before = sum(metric_sum(url, "arbiter_clock_events_total", kind=kind) for kind in kinds)
    process = service.process
    assert process is not None
    process.stop()  # the events pile up while the service is down
    tag = uuid.uuid4().hex[:6]
    ids = [f"life-{tag}-{n}" for n in range(games)]
    requested, started, finished = lifecycle_events(ids, f"tournament-{tag}")
    producer = Producer(bootstrap)
    await producer.start()
    began = time.perf_counter()
    # In slices, in the order the system publishes them: a slice's games are requested, then
    # started, then finished (across topics the consumer still sees them in any order).
    step = 2_000
    for first in range(0, games, step):
        await producer.send(events.GAME_REQUESTED.name, requested[first:first + step])
        await producer.send(events.GAME_STARTED.name, started[first:first + step])
        await producer.send(events.GAME_FINISHED.name, finished[first:first + step])
    produce_s = time.perf_counter() - began
    await producer.stop()
    total = 3 * games
    print(f"produced {games:,} games' GameRequested + GameStarted + GameFinished in {produce_s:.1f} s")

    stack.start_service("clock")
    cpu = psutil.Process(service.process.pid)  # type: ignore[union-attr]
    spy = None
    if profile:
        spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--nonblocking", "-r", "200",
                                "-f", "raw", "-o", profile, "-p", str(cpu.pid)], stdout=subprocess.DEVNULL)
    points: list[tuple[float, float]] = []
    cpu_points: list[float] = []
    clock_started = time.perf_counter()
    while True:
        try:
            # The counters restart with the process: every event counted now is one of these.
            count = sum(metric_sum(url, "arbiter_clock_events_total", kind=kind) for kind in kinds)
        except OSError:
            count = 0.0
        points.append((time.perf_counter(), count))
        times = cpu.cpu_times()
        cpu_points.append(times.user + times.system)
        if count >= total:
            break
        if time.perf_counter() - clock_started > 300:
            raise TimeoutError(f"the service did not process the life cycles in 5 minutes ({count:,.0f} of {total:,})")
        await asyncio.sleep(0.25)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    if os.environ.get("BENCH_DEBUG"):
        print(list(zip(points, cpu_points, strict=True)))
    rate = _rate_between(points, 0.1 * total, 0.9 * total) / 3
    low = next(i for i, (_, c) in enumerate(points) if c >= 0.1 * total)
    high = next(i for i, (_, c) in enumerate(points) if c >= 0.9 * total)
    cpu_per_game = 3 * (cpu_points[high] - cpu_points[low]) / max(1.0, points[high][1] - points[low][1])
    load = os.getloadavg()[0]
    first = next(t for t, c in points if c > 0)
    outcomes = {kind: {} for kind in kinds}  # type: ignore[var-annotated]
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "arbiter_clock_events_total" and sample.labels.get("kind") in outcomes:
                outcomes[sample.labels["kind"]][sample.labels["outcome"]] = int(sample.value)
    print(f"clock service (game life cycles: requested, started, finished; no moves): {rate:>9,.0f} games/s "
          f"(10%..90%); all {games:,} in {points[-1][0] - first:.1f} s after the first"
          + ("" if before == 0 else f" ({before:,.0f} events counted before the restart)"))
    print(f"  outcomes: {outcomes}")
    print(f"  service CPU {cpu_per_game * 1e6:.1f} us per game (one process: {1 / cpu_per_game:,.0f} games/s "
          "per core); "
          f"machine load average {load:.1f} on {os.cpu_count()} cores")
    await wait_for(lambda: _live_at_most(redis, prefix, 0), 120, "life-cycle games over")


async def paced_lifecycle(stack: SystemStack, redis: aioredis.Redis, prefix: str, games: int, rate: float,
                          profile: str = "") -> None:
    """Game life cycles produced at `rate` games/s while the service runs, as the system benchmark feeds it.

    The service then sees small batches (what arrived since its last fetch), so what it pays per
    batch (round trips, queries) counts as it does live; the backlog part hides it.
    """
    bootstrap = stack.kafka_bootstrap
    service = stack.services["clock"]
    url = service.metrics_url
    kinds = ("requested", "started", "finished")
    before = sum(metric_sum(url, "arbiter_clock_events_total", kind=kind) for kind in kinds)
    lifecycle_topics = (events.GAME_REQUESTED.name, events.GAME_STARTED.name, events.GAME_FINISHED.name)
    calls_before = sum(metric_sum(url, "arbiter_event_handler_seconds_count", topic=t) for t in lifecycle_topics)
    tag = uuid.uuid4().hex[:6]
    ids = [f"paced-{tag}-{n}" for n in range(games)]
    requested, started, finished = lifecycle_events(ids, f"tournament-{tag}")
    producer = Producer(bootstrap)
    await producer.start()
    cpu = psutil.Process(service.process.pid)  # type: ignore[union-attr]
    # What the idle service burns anyway (fetch loops, flag poller), to read the figure below against.
    times = cpu.cpu_times()
    idle_began, idle_cpu = time.perf_counter(), times.user + times.system
    await asyncio.sleep(3.0)
    times = cpu.cpu_times()
    idle = (times.user + times.system - idle_cpu) / (time.perf_counter() - idle_began)
    spy = None
    if profile:
        spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--nonblocking", "-r", "200",
                                "-f", "raw", "-o", f"{profile}.paced", "-p", str(cpu.pid)], stdout=subprocess.DEVNULL)
    tick = 0.02
    per_tick = max(1, round(rate * tick))
    times = cpu.cpu_times()
    cpu_before = times.user + times.system
    began = time.perf_counter()
    for n, first in enumerate(range(0, games, per_tick)):
        await producer.send(events.GAME_REQUESTED.name, requested[first:first + per_tick])
        # The play site starts and finishes (instantly) the games requested one tick earlier.
        if first >= per_tick:
            await producer.send(events.GAME_STARTED.name, started[first - per_tick:first])
            await producer.send(events.GAME_FINISHED.name, finished[first - per_tick:first])
        await asyncio.sleep(max(0.0, began + (n + 1) * tick - time.perf_counter()))
    last = (games - 1) // per_tick * per_tick
    await producer.send(events.GAME_STARTED.name, started[last:])
    await producer.send(events.GAME_FINISHED.name, finished[last:])
    produce_s = time.perf_counter() - began
    await producer.stop()
    total = before + 3 * games

    async def done() -> bool:
        return sum(metric_sum(url, "arbiter_clock_events_total", kind=kind) for kind in kinds) >= total

    await wait_for(done, 120, "paced life cycles handled")
    elapsed = time.perf_counter() - began
    times = cpu.cpu_times()
    used = times.user + times.system - cpu_before
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    load = os.getloadavg()[0]
    print(f"clock service, {games:,} life cycles produced at {games / produce_s:,.0f} games/s (as they come live): "
          f"all handled {elapsed - produce_s:.2f} s after the last was produced")
    calls = sum(metric_sum(url, "arbiter_event_handler_seconds_count", topic=t) for t in lifecycle_topics)
    calls -= calls_before
    print(f"  {calls:,.0f} handler calls, {3 * games / max(1.0, calls):.1f} events each")
    print(f"  service CPU {used / games * 1e6:.1f} us per game ({used / elapsed * 100:.0f}% of a core; idle it uses "
          f"{idle * 100:.1f}%, i.e. {(used - idle * elapsed) / games * 1e6:.1f} us per game above idle); "
          f"machine load average {load:.1f} on {os.cpu_count()} cores")
    await wait_for(lambda: _live_at_most(redis, prefix, 0), 120, "paced games over")


async def measure(stack: SystemStack, prefix: str, args: argparse.Namespace) -> None:
    """The measurements on one running stack."""
    redis = aioredis.from_url(stack.redis_url)
    try:
        if not args.skip_throughput:
            await throughput(stack, redis, prefix, args.games, args.moves)
        if not args.skip_lifecycle:
            await lifecycle(stack, redis, prefix, args.lifecycle_games, args.profile)
            if args.lifecycle_rate > 0:
                await paced_lifecycle(stack, redis, prefix, args.lifecycle_games, args.lifecycle_rate, args.profile)
        if not args.skip_paced:
            await paced_moves(stack, redis, prefix, args.paced_games, args.paced_rate, args.paced_seconds)
        if not args.skip_flags:
            await flag_latency(stack, redis, prefix, args.clocks, args.window, args.lead)
    finally:
        await redis.aclose()


def main() -> None:
    """Start the stack, measure, stop."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--moves", type=int, default=200_000)
    parser.add_argument("--clocks", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=20.0, help="seconds over which the clocks flag")
    # After the throughput part the service still works through its backlog: 30 s were too few
    # for all 10,000 clocks to be running at the first deadline on a loaded machine.
    parser.add_argument("--lead", type=float, default=60.0, help="seconds from loading to the first deadline")
    parser.add_argument("--lifecycle-games", type=int, default=20_000)
    parser.add_argument("--lifecycle-rate", type=float, default=1_000.0,
                        help="games/s of the paced life-cycle part (0: skip it)")
    parser.add_argument("--paced-games", type=int, default=2_000)
    parser.add_argument("--paced-rate", type=float, default=2_000.0, help="moves/s of the move-latency part")
    parser.add_argument("--paced-seconds", type=float, default=20.0)
    parser.add_argument("--skip-paced", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-lifecycle", action="store_true")
    parser.add_argument("--profile", default="", metavar="FILE",
                        help="py-spy samples of the service during the life-cycle part (folded stacks)")
    parser.add_argument("--skip-flags", action="store_true")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for the clock service, e.g. --env MOVE_BATCH_SIZE=2000")
    args = parser.parse_args()
    prefix = f"clock-bench-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="bench-clock-") as state:
        stack = SystemStack(
            Path(state), free_ports=True, environ=dict(os.environ), say=lambda line: print(f"  {line}"),
            extra_env={"CLOCK_REDIS_PREFIX": prefix, **dict(item.split("=", 1) for item in args.env)},
        )
        try:
            stack.start_infrastructure()
            stack.start_services(("clock",))
            stack.wait_serving(timeout=120, names=("clock",))
            print(f"machine: {os.cpu_count()} cores; clock service with default settings; Redis prefix {prefix}")
            asyncio.run(measure(stack, prefix, args))
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
