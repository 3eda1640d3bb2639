"""The load benchmark: the machine's raw Kafka and Redis rates, then the running system under rising load.

Stages, in one run:
1. raw: produce and consume on a scratch topic with aiokafka; pipelined and one-at-a-time Redis.
2. played: the simulator plays real random games (no think time) in round robins: moves/s, results/s.
3. tournament results at rising offered rates: the simulator answers every GameRequested at once
   (GameStarted + GameFinished, no moves) at most R results/s, published every `result_every_ms`;
   measured: achieved results/s, p50/p99 result -> next pairing, result -> rating updated, CPU per service.
   The services off that path (clock, arena, rating, openings) run at `off_path_nice` meanwhile, as
   CPU weights would rank them where services share a host (each in its scheduling group too, see
   `set_niceness`), and are put back for the stages after; the burst and the firehose nice those of
   them off their own path (not rating, which they measure).
   The first stage starts once every round 1 is requested and every service's consumer groups have
   committed all they were sent, so that no stage times the setup's backlog (each burst below waits alike).
4. burst: a whole round of many round robins, its games started, finishes at once: how fast pairing
   takes the results into the standings and the rating service rates them, while the next round
   is paired; several rounds one after the other, the figures their medians.
5. firehose: rated GameFinished events straight onto game.finished at rising rates: what the
   rating service (and the pairing consumer, which skips games it does not own) keeps up with.
Bench scripts print figures; nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.devstack.chaos import group_lag
from arbiter.devstack.processes import Niceness, restore_niceness, set_niceness
from arbiter.kit import events
from arbiter.kit.events import timestamp
from arbiter.kit.kafka import outbox_publisher, topic_partitions
from arbiter.kit.outbox import OutboxRecord, record_of
from arbiter.kit.redisclient import connect_redis
from arbiter.kit.timesource import TimeSource
from arbiter.simulator.behaviour import Behaviour, Profiles
from arbiter.simulator.playsite import PlaySite, PlaySiteConfig
from arbiter.simulator.scenario import TOURNAMENT_LEAD_SECONDS, channel_to, percentile, registered

log = logging.getLogger(__name__)
SERVICES = ("pairing", "clock", "arena", "rating", "openings")
# Off the result -> next pairing path, but what the burst and the firehose time: not niced for them.
MEASURED_AFTER_RATES = ("rating",)
# The first second of a firehose stage fills the pipeline: its output rate is not yet the sustained one.
FIREHOSE_WARM_UP_SECONDS = 1.0


@dataclass(frozen=True)
class BenchConfig:
    """What the benchmark runs and for how long."""

    rates: tuple[int, ...] = (250, 500, 1000, 2000, 4000)
    stage_seconds: float = 8.0
    entrants: int = 16  # round robins (threshold 20): 15 rounds of 8 games each
    tournaments: int = 200
    played_tournaments: int = 12
    played_seconds: float = 20.0
    # Round robins of `entrants` whose first round finishes at once (625 of 16: 5,000 results).
    burst_tournaments: int = 625
    # Whole rounds released one after the other (each once the next is all requested): one burst
    # lasts about a second and its rates spread by a fifth from run to run; the median of several is
    # the figure.
    burst_rounds: int = 3
    # Above the 5,000/s as well: a stage offered exactly 5,000 can only show up to that.
    firehose_rates: tuple[int, ...] = (1000, 5000, 6000)
    # Real ms between two publications of the rate stages' results (one record batch per topic each),
    # as a play site's lingering producer sends them. On tansu every fetch that returns records lists
    # every batch its partition holds, so a publication every 10 ms instead of 20 doubles the batches
    # that the most read partitions (game.started, game.finished) pile up and made the 1,000/s stage's
    # p99 108.6 ms instead of 59.2 (tansu 55% of a core instead of 34%; issue 9 note).
    result_every_ms: int = 20
    # Niceness of the services off the measured path (Target.off_path_pids) during each stage after the
    # played games (0: left alone): on two shared cores the measured path otherwise waits behind their
    # work. The burst and the firehose measure the rating service, which they leave alone
    # (MEASURED_AFTER_RATES). Each service is a scheduling group of its own (its session's autogroup),
    # niced as a whole: with only its threads niced, two services on one core split it evenly (issue 9 note).
    off_path_nice: int = 0
    firehose_seconds: float = 6.0
    # Real seconds to wait for the rating service to drain a firehose stage.
    drain_seconds: float = 60.0
    raw_messages: int = 100_000
    raw_message_bytes: int = 200
    redis_ops: int = 100_000
    seed: int = 1


@dataclass
class Target:
    """The running system: Kafka, Redis, gRPC addresses, /metrics URLs, shared time, consumer groups."""

    kafka: str
    redis_url: str
    pairing: str
    metrics: dict[str, str]
    time_source: TimeSource
    rating: str = ""
    auth_signing_key: str = ""
    # Fetch wait of the benchmark's rating watch, as the play site's: tansu holds a fetch for the whole
    # wait, so at aiokafka's 500 ms the watch saw an update up to half a second after it was published
    # (result -> rating updated p50 217-260 ms in the firehose at 5,000/s; 78-81 ms at 20 ms).
    watch_fetch_wait_ms: int = 500
    # Per service, each consumer group id and the topics it reads (SystemStack.consumer_groups): the
    # burst reads the services' progress from their committed offsets, not from their /metrics.
    consumer_groups: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    # By service, the processes off the result -> next pairing path (see BenchConfig.off_path_nice).
    off_path_pids: dict[str, int] = field(default_factory=dict)

    def all_consumer_groups(self) -> dict[str, tuple[str, ...]]:
        """Every service's consumer groups, each with the topics it reads."""
        return {group: topics for groups in self.consumer_groups.values() for group, topics in groups.items()}

    def groups_reading(self, topic: str, services: Sequence[str] | None = None) -> list[str]:
        """The consumer groups that read `topic`, of `services` (every service when None)."""
        return [group for service, groups in self.consumer_groups.items()
                if services is None or service in services
                for group, topics in groups.items() if topic in topics]


@dataclass
class Report:
    """Every figure, as written to bench-results.json."""

    machine: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    played: dict[str, Any] = field(default_factory=dict)
    stages: list[dict[str, Any]] = field(default_factory=list)
    burst: dict[str, Any] = field(default_factory=dict)
    firehose: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- the machine today ------------------------------------------------------------------------


def python_loop_ns(iterations: int = 2_000_000, repeats: int = 3) -> float:
    """Nanoseconds per step of a plain Python loop, best of `repeats`: this host's one-core speed today.

    Hosts of one machine kind differ from day to day; with `socket_round_trip_us` and the time
    stolen by the hypervisor it tells whether two runs ran on comparable hosts.
    """
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        total = 0
        for step in range(iterations):
            total += step
        best = min(best, time.perf_counter() - started)
    return round(best / iterations * 1e9, 1)


# The echo of `socket_round_trip_us`: a fresh interpreter, since forking this process (threads,
# an event loop, gRPC) is not safe.
_ECHO = """
import socket, sys
echo = socket.socket(fileno=int(sys.argv[1]))
while byte := echo.recv(1):
    echo.sendall(byte)
"""


def socket_round_trip_us(cpus: tuple[int, int], round_trips: int = 5_000) -> float | None:
    """Microseconds for one byte to go to an echo process and back over a socket pair, best of 3.

    Every hop of the system (Kafka, PostgreSQL, Redis, gRPC) pays this kernel path. `cpus` pins
    this process and the echo to those two CPUs: the same one twice measures system calls and
    context switches, two of them adds waking a sleeping CPU, which a virtual machine may make
    slow (a hypervisor exit when the guest does not poll before halting). None without Linux's
    CPU affinity, or when `cpus` names a CPU this process may not use.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        return None
    mine, theirs = socket.socketpair()
    echo = subprocess.Popen([sys.executable, "-c", _ECHO, str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()
    try:
        os.sched_setaffinity(echo.pid, {cpus[1]})
        os.sched_setaffinity(0, {cpus[0]})
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(round_trips):
                mine.sendall(b"x")
                mine.recv(1)
            best = min(best, time.perf_counter() - started)
        return round(best / round_trips * 1e6, 1)
    finally:
        os.sched_setaffinity(0, allowed)
        mine.close()
        echo.wait(timeout=10)


class HostTicks(NamedTuple):
    """CPU ticks of the whole machine since boot, every CPU summed (/proc/stat)."""

    total: int
    # Nothing to run, or waiting for a disk.
    idle: int
    # Wanted to run while the hypervisor ran someone else.
    stolen: int


def host_cpu_ticks() -> HostTicks:
    """The machine's CPU ticks since boot, from /proc/stat (all zero without it)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except OSError:
        return HostTicks(0, 0, 0)
    # user nice system idle iowait irq softirq steal [guest guest_nice, already inside user and nice]
    fields += [0] * (8 - len(fields))
    return HostTicks(sum(fields[:8]), fields[3] + fields[4], fields[7])


def stolen_percent(before: HostTicks, after: HostTicks) -> float | None:
    """The share of CPU time the hypervisor gave to others between two `host_cpu_ticks` readings."""
    total = after.total - before.total
    return round((after.stolen - before.stolen) / total * 100, 1) if total > 0 else None


def busy_percent(before: HostTicks, after: HostTicks, cpus: int) -> float | None:
    """How busy the machine was between two readings, in % of one core (up to `cpus` x 100), stolen time apart."""
    total = after.total - before.total
    if total <= 0:
        return None
    idle, stolen = after.idle - before.idle, after.stolen - before.stolen
    return round((total - idle - stolen) / total * cpus * 100, 1)


def host_load(before: HostTicks, after: HostTicks) -> dict[str, Any]:
    """The whole machine over a stage: busy (every process, ours or not, in % of one core) and stolen.

    Beside the per-service CPU of a stage: a stage run at nearly every core's limit queues every
    hop, and a host that steals much or ran others' work (a machine kind shared with other
    servers) explains a slow stage that the services' own figures do not.
    """
    cores = os.cpu_count() or 1
    return {"cores": cores, "busy_percent": busy_percent(before, after, cores),
            "stolen_percent": stolen_percent(before, after)}


# -- raw rates ---------------------------------------------------------------------------------


async def raw_kafka(bootstrap: str, messages: int, size: int) -> dict[str, Any]:
    """Produce then consume `messages` records of `size` bytes on a scratch topic."""
    topic = f"bench.raw.{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
    finally:
        await admin.close()
    payload = os.urandom(size)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=512 * 1024, acks=1)
    await producer.start()
    try:
        partitions = sorted(await producer.partitions_for(topic))
        started = time.perf_counter()
        sent = 0
        # Whole batches per partition: what the client can push, not the per-record Python overhead.
        while sent < messages:
            futures = []
            for partition in partitions:
                batch = producer.create_batch()
                while sent < messages and batch.append(key=None, value=payload, timestamp=None) is not None:
                    sent += 1
                batch.close()
                futures.append(await producer.send_batch(batch, topic, partition=partition))
                if sent >= messages:
                    break
            await asyncio.gather(*futures)
        produce_seconds = time.perf_counter() - started
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, max_partition_fetch_bytes=4 * 1024 * 1024)
    await consumer.start()
    try:
        received = 0
        started = time.perf_counter()
        while received < messages and time.perf_counter() - started < 120:
            batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
            received += sum(len(records) for records in batches.values())
        consume_seconds = time.perf_counter() - started
    finally:
        await consumer.stop()
    return {
        "messages": messages, "bytes": size,
        "produce_per_s": round(messages / produce_seconds), "consume_per_s": round(received / consume_seconds),
        "produce_mb_per_s": round(messages * size / produce_seconds / 1e6, 1),
    }


async def raw_redis(url: str, ops: int) -> dict[str, Any]:
    """Pipelined SET+INCR and one-at-a-time GET round trips, through the services' client."""
    client = connect_redis(url)
    try:
        prefix = f"bench:{uuid.uuid4().hex[:6]}:"
        started = time.perf_counter()
        for chunk in range(0, ops, 1000):
            async with client.pipeline(transaction=False) as pipe:
                for i in range(chunk, min(ops, chunk + 1000)):
                    pipe.set(prefix + str(i % 5000), i)
                await pipe.execute()
        pipelined = ops / (time.perf_counter() - started)
        single = min(ops, 10_000)
        started = time.perf_counter()
        for i in range(single):
            await client.get(prefix + str(i % 5000))
        one_by_one = single / (time.perf_counter() - started)
        keys = [key async for key in client.scan_iter(prefix + "*", count=1000)]
        for chunk in range(0, len(keys), 1000):
            await client.delete(*keys[chunk:chunk + 1000])
    finally:
        await client.aclose()
    return {"pipelined_ops_per_s": round(pipelined), "round_trip_ops_per_s": round(one_by_one)}


# -- metrics -----------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


def scrape(url: str) -> dict[str, float]:
    """Every sample of a Prometheus endpoint: "name{labels}" -> value (empty if unreachable)."""
    try:
        with urllib.request.urlopen(url, timeout=3) as reply:
            text = reply.read().decode()
    except OSError:
        return {}
    samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


# The servers beside the services, by the start of their process name (tansu's carries its version):
# where the rest of the two cores goes.
INFRASTRUCTURE_PROCESSES = (
    ("tansu", "tansu"), ("postgres", "postgres (every cluster)"), ("redis-server", "redis (every server)"),
)


@dataclass(frozen=True)
class Reading:
    """Every service's /metrics, scraped once, and the infrastructure's CPU seconds: the system at one moment.

    Every figure of a stage's start or end comes from one reading, so no service renders its
    /metrics twice for it and the figures agree on the moment.
    """

    samples: dict[str, dict[str, float]]
    infrastructure: dict[str, float]

    @classmethod
    def take(cls, metrics: dict[str, str], infrastructure: bool = True) -> Reading:
        """Scrape each service in `metrics`; read the infrastructure's CPU unless told not to."""
        return cls({name: scrape(url) for name, url in metrics.items()},
                   infrastructure_cpu_seconds() if infrastructure else {})

    @classmethod
    async def read(cls, metrics: dict[str, str], infrastructure: bool = True) -> Reading:
        """`take` in a worker thread: the play site in this process keeps playing while the services render."""
        return await asyncio.to_thread(cls.take, metrics, infrastructure)

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each service (process_cpu_seconds_total) and infrastructure server."""
        seconds = {name: samples.get("process_cpu_seconds_total", 0.0) for name, samples in self.samples.items()}
        seconds.update(self.infrastructure)
        return seconds

    def collecting(self) -> dict[str, float]:
        """Seconds each service's event loop has stood still in garbage collection (every generation)."""
        return {name: _matching(samples, "arbiter_gc_pause_seconds_sum", ()) for name, samples in self.samples.items()}

    def consumed(self, service: str, topic: str) -> float:
        """Events of `topic` the service consumed, every outcome but errors (0 when it is not read)."""
        return consumed_in(self.samples.get(service, {}), topic)

    def histograms(self, service: str, series: Sequence[str]) -> dict[str, tuple[float, float]]:
        """(sum, count) of each histogram `series` of the service (see `histogram_totals`)."""
        return histogram_totals(self.samples.get(service, {}), series)


def process_cpu_seconds(pid: int | str) -> tuple[str, float]:
    """A process's name and user + system CPU seconds so far, from Linux /proc (OSError once it ended)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    name, after = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
    # utime and stime are fields 14 and 15 of stat, the 12th and 13th after the name.
    return name, (int(after[11]) + int(after[12])) / os.sysconf("SC_CLK_TCK")


def infrastructure_cpu_seconds() -> dict[str, float]:
    """CPU seconds of the live tansu, PostgreSQL and Redis processes (empty without /proc)."""
    totals: dict[str, float] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return totals
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name, seconds = process_cpu_seconds(entry.name)
        except OSError:
            continue  # the process ended meanwhile
        label = next((label for prefix, label in INFRASTRUCTURE_PROCESSES if name.startswith(prefix)), None)
        if label is not None:
            totals[label] = totals.get(label, 0.0) + seconds
    return totals


# Where a result's way to the next pairing goes, inside the pairing service: (label, histogram series).
GAME_FINISHED_HANDLER = 'arbiter_event_handler_seconds{topic="game.finished"}'
PAIRING_PARTS = (
    ("result age at handling", "arbiter_result_age_seconds"),
    ("game.finished handler", GAME_FINISHED_HANDLER),
    ("wake -> worker step", "arbiter_tournament_step_wait_seconds"),
    ("pairing a round", 'arbiter_pairing_seconds{format="round_robin"}'),
)


def histogram_totals(samples: dict[str, float], series: Sequence[str]) -> dict[str, tuple[float, float]]:
    """(sum, count) of each histogram `series` ("name" or "name{label="value",...}"), over its matching labels."""
    totals = {}
    for name in series:
        base, _, wanted = name.partition("{")
        pairs = [pair for pair in wanted.rstrip("}").split(",") if pair]
        totals[name] = (_matching(samples, base + "_sum", pairs), _matching(samples, base + "_count", pairs))
    return totals


def _matching(samples: dict[str, float], name: str, pairs: Sequence[str]) -> float:
    return sum(value for key, value in samples.items()
               if (key == name or key.startswith(name + "{")) and all(pair in key for pair in pairs))


def mean_ms(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> dict[str, float | None]:
    """Mean of each histogram between two `histogram_totals` readings, in ms (None: no observation)."""
    means: dict[str, float | None] = {}
    for name, (total, count) in after.items():
        total_before, count_before = before.get(name, (0.0, 0.0))
        observations = count - count_before
        means[name] = round((total - total_before) / observations * 1000, 1) if observations > 0 else None
    return means


def consumed_in(samples: dict[str, float], topic: str) -> float:
    """arbiter_events_consumed_total of one service's samples for one topic, every outcome but errors."""
    total = 0.0
    for key, value in samples.items():
        if (key.startswith("arbiter_events_consumed_total") and f'topic="{topic}"' in key
                and 'outcome="error"' not in key):
            total += value
    return total


# -- watching the system from the broker -------------------------------------------------------


class CommittedOffsets:
    """How many records consumer groups have committed on a topic, asked of the broker.

    A service commits a batch's offsets once it has handled the batch, so this tells when it is
    done without asking the service: scraping its /metrics as often would take the CPU it measures
    (a tenth of the pairing service's during a burst, py-spy) and see the end only at the next look.
    Each look is one OffsetFetch, a small request for the broker beside the fetches of a burst.
    """

    def __init__(self, bootstrap: str) -> None:
        self.admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        self.metadata = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        self._partitions: dict[str, list[TopicPartition]] = {}
        self._coordinators: dict[str, int] = {}

    async def start(self) -> None:
        """Connect."""
        await self.admin.start()
        await self.metadata.start()

    async def stop(self) -> None:
        """Disconnect."""
        await self.metadata.stop()
        await self.admin.close()

    async def total(self, group_id: str, topic: str) -> int:
        """Records of `topic` that `group_id` has committed, over every partition (0 before its first commit)."""
        partitions = self._partitions.get(topic)
        if partitions is None:
            partitions = self._partitions[topic] = await topic_partitions(self.metadata, [topic])
            if not partitions:
                raise ValueError(f"topic {topic} does not exist on the broker")
        if group_id not in self._coordinators:
            self._coordinators[group_id] = await self.admin.find_coordinator(group_id)
        try:
            offsets = await self.admin.list_consumer_group_offsets(group_id, self._coordinators[group_id],
                                                                   partitions)
        except KafkaError:
            self._coordinators.pop(group_id, None)  # it may have moved: found again on the next look
            raise
        return sum(max(0, meta.offset) for meta in offsets.values())

    async def totals(self, groups: Sequence[str], topic: str) -> dict[str, int]:
        """Each group's committed records of `topic`."""
        return dict(zip(groups, await asyncio.gather(*(self.total(group, topic) for group in groups)), strict=True))

    async def wait_for(self, groups: Sequence[str], topic: str, counts: dict[str, int], more: int,
                       timeout: float, every: float = 0.01) -> float | None:
        """Wait until each group has committed `more` records of `topic` past `counts`; when (monotonic), or None."""
        if not groups:
            raise ValueError(f"no consumer group to wait for on {topic}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                now = await self.totals(groups, topic)
            except KafkaError as error:  # one failed look is no reason to lose the stage: look again
                log.warning("committed offsets unread", extra={"topic": topic, "error": repr(error)})
            else:
                if all(now[group] - counts[group] >= more for group in groups):
                    return time.monotonic()
            await asyncio.sleep(every)
        return None


class RatingWatch:
    """Consumes rating.updated and notes when each game's first update arrived."""

    def __init__(self, bootstrap: str, fetch_wait_ms: int) -> None:
        self.consumer = AIOKafkaConsumer(
            events.RATING_UPDATED.name, bootstrap_servers=bootstrap, auto_offset_reset="latest",
            enable_auto_commit=False, group_id=f"bench-{uuid.uuid4().hex[:8]}", fetch_max_wait_ms=fetch_wait_ms,
        )
        self.first_seen: dict[str, float] = {}
        self.count = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Join and start reading from the end of the topic."""
        await self.consumer.start()
        # A fresh group has no position until its first fetch; make "latest" concrete now.
        while not self.consumer.assignment():
            await asyncio.sleep(0.1)
        await self.consumer.seek_to_end()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=200, max_records=5000)
            now = time.monotonic()
            for records in batches.values():
                for record in records:
                    self.count += 1
                    update = ev.RatingUpdated()
                    update.ParseFromString(record.value)
                    self.first_seen.setdefault(update.game_id, now)

    async def stop(self) -> None:
        """Stop reading."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.stop()


def latency_ms(sent: dict[str, float], seen: dict[str, float], games: Sequence[str]) -> dict[str, Any]:
    """p50/p99 of seen - sent over `games` that were seen."""
    values = sorted(seen[g] - sent[g] for g in games if g in seen and g in sent)
    if not values:
        return {"samples": 0, "p50": None, "p99": None}
    return {"samples": len(values), "p50": round(percentile(values, 50) * 1000, 1),
            "p99": round(percentile(values, 99) * 1000, 1)}


# -- the system under load ---------------------------------------------------------------------


async def create_round_robins(target: Target, count: int, entrants: int, prefix: str,
                              concurrency: int = 16) -> list[str]:
    """`count` round robins of `entrants` (threshold 20, T-2), all starting after the T-4 minimum."""
    channel = channel_to(target.pairing, target.auth_signing_key, caller="bench")
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    gate = asyncio.Semaphore(concurrency)
    created: list[str] = []

    failures: list[str] = []

    async def one(index: int) -> None:
        try:
            await create(index)
        except grpc.aio.AioRpcError as error:  # one refused tournament must not end the benchmark
            failures.append(f"{error.code().name}: {error.details()}")

    async def create(index: int) -> None:
        players = [f"{prefix}t{index:04d}-p{seat:02d}" for seat in range(entrants)]
        async with gate:
            # T-4 counts from each creation; the joins of all of them must fit in the lead.
            starts_at = target.time_source.now() + timedelta(seconds=TOURNAMENT_LEAD_SECONDS)
            response = await stub.CreateTournament(tp.CreateTournamentRequest(
                actor=registered(players[0]), request_id=f"{prefix}{index}",
                settings=tp.TournamentSettings(
                    name=f"bench {prefix}{index}", variant="international", threshold=20, capacity=entrants,
                    time_control=common.TimeControl(fischer=common.FischerControl(
                        base_seconds=3 * 3600, increment_seconds=0)),
                    starts_at=timestamp(starts_at), duration_minutes=24 * 60, rated=True,
                    opening_mode=common.OPENING_MODE_FREE,
                )))
            for player in players:
                await stub.JoinTournament(tp.JoinTournamentRequest(
                    actor=registered(player), tournament_id=response.tournament.id))
        created.append(response.tournament.id)

    try:
        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        await channel.close()
    if failures:
        log.warning("tournaments not created", extra={"count": len(failures), "first": failures[0]})
        if not created:
            raise RuntimeError(f"no tournament could be created: {failures[0]}")
    return created


async def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll `predicate` every 50 ms for up to `timeout` real seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def wait_quiet(bootstrap: str, groups: dict[str, tuple[str, ...]], timeout: float,
                     settle: float = 0.5) -> bool:
    """Wait until every consumer group has committed every record of its topics, on two looks `settle` s apart.

    Two looks, because a service that has just consumed everything may still be publishing what
    it caused (its outbox), which another group then has to read. Each look is the chaos suite's
    `group_lag`, which reads a partition's true end past tansu's high watermark.
    """
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        try:
            lags = await asyncio.gather(*(group_lag(bootstrap, group, topics) for group, topics in groups.items()))
        except KafkaError as error:  # one failed look is no reason to lose the stage: look again
            log.warning("committed offsets unread", extra={"error": repr(error)})
            lags = [-1]
        now = time.monotonic()
        if any(lags):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= settle:
            return True
        await asyncio.sleep(0.1)
    return False


async def wait_settled(count: Callable[[], int], goal: int, timeout: float, still_seconds: float = 2.0) -> bool:
    """Wait until `count()` reaches `goal`, or has not grown for `still_seconds`; whether it reached it."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while count() < goal and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still_seconds:
            break
    return count() >= goal


async def played_stage(target: Target, config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    """Real random games with no think time: what the play site and the system sustain."""
    prefix = f"bp{uuid.uuid4().hex[:4]}-"
    profiles = Profiles(seed=config.seed, mix={Behaviour.NORMAL: 1.0})
    playsite = PlaySite(target.kafka, target.time_source, profiles, PlaySiteConfig(
        seed=config.seed, think_seconds=(0.0, 0.0), group_id=f"{prefix}playsite", player_prefix=prefix))
    await playsite.start()
    try:
        await create_round_robins(target, config.played_tournaments, 8, prefix)
        real_lead = target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
        say(f"played: {config.played_tournaments} round robins of 8 created; starting in {real_lead:.0f} s")
        await wait_until(lambda: playsite.stats.started > 0, real_lead + 30)
        cpu_before = (await Reading.read(target.metrics)).cpu()
        moves_before, finished_before = playsite.stats.moves, playsite.stats.finished
        started = time.monotonic()
        await asyncio.sleep(config.played_seconds)
        elapsed = time.monotonic() - started
        cpu_after = (await Reading.read(target.metrics)).cpu()
        moves = playsite.stats.moves - moves_before
        finished = playsite.stats.finished - finished_before
        latencies = sorted(playsite.stats.pairing_latencies)
    finally:
        await playsite.stop()
    return {
        "tournaments": config.played_tournaments, "seconds": round(elapsed, 1),
        "moves_per_s": round(moves / elapsed, 1), "results_per_s": round(finished / elapsed, 1),
        "result_to_next_pairing_ms": _pct(latencies),
        "cpu_percent": _cpu(cpu_before, cpu_after, elapsed),
    }


async def first_round_requested(target: Target, playsite: PlaySite, count: int, entrants: int, prefix: str,
                                share: float, patience: float) -> tuple[list[str], int]:
    """Create `count` round robins and wait (lead time + `patience` s) until `share` of round 1 reached the play site.

    Returns the ids created and round 1's number of games.
    """
    created = await create_round_robins(target, count, entrants, prefix)
    games = len(created) * (entrants // 2)
    real_lead = target.time_source.real_seconds(TOURNAMENT_LEAD_SECONDS) + 1
    await wait_until(lambda: playsite.backlog >= games * share, real_lead + patience)
    return created, games


def nice_off_path(pids: Mapping[str, int], niceness: int, stage: str, say: Callable[[str], None]) -> Niceness:
    """Give the processes `pids` (by service) `niceness` for `stage` (0: left alone); what changed, to put back."""
    niced = set_niceness(list(pids.values()), niceness) if niceness and pids else Niceness()
    if niced:
        say(f"{stage}: the services off the measured path run at niceness {niceness} ({len(pids)} processes: "
            f"{', '.join(pids)}; {len(niced.threads)} threads, {len(niced.autogroups)} scheduling groups)")
    return niced


def niceness_run_at(niced: Niceness, niceness: int) -> int:
    """The niceness a stage's off-path services ran at, for its report: 0 where nothing was niced."""
    return niceness if niced else 0


def put_back(niced: Niceness, niceness: int, stage: str, say: Callable[[str], None]) -> None:
    """Undo `nice_off_path` where allowed, saying what stays niced."""
    if niced and restore_niceness(niced):
        say(f"{stage}: the services off the measured path stay at niceness {niceness} for the rest of the run: "
            "raising a process's priority again takes CAP_SYS_NICE")


def off_path_after_rates(target: Target) -> dict[str, int]:
    """The off-path services that the burst and the firehose do not time (all but MEASURED_AFTER_RATES)."""
    return {name: pid for name, pid in target.off_path_pids.items() if name not in MEASURED_AFTER_RATES}


async def rate_stages(target: Target, config: BenchConfig, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Tournament results at rising offered rates."""
    prefix = f"br{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(target.kafka, target.time_source, Profiles(seed=config.seed), PlaySiteConfig(
        seed=config.seed, group_id=f"{prefix}playsite", instant_results=True, requests_only=True, result_rate=1.0,
        instant_every_seconds=config.result_every_ms / 1000, player_prefix=prefix))
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    await playsite.start()
    await watch.start()
    stages = []
    niced = Niceness()
    try:
        started = time.monotonic()
        created, games = await first_round_requested(target, playsite, config.tournaments, config.entrants, prefix,
                                                     share=0.9, patience=60)
        # The first stage starts once every tournament has paired round 1 (a late start pairs it on its
        # timer, read by no consumer) and the services have read everything the setup caused: measured
        # while they still worked off its backlog (round 1 being paired, its requests being read by
        # the clock), the stage's first two seconds held its worst latencies (issue 9 note).
        await wait_settled(lambda: playsite.stats.requested, games, config.drain_seconds)
        quiet = await wait_quiet(target.kafka, target.all_consumer_groups(), config.drain_seconds)
        say(f"rates: {len(created)} of {config.tournaments} round robins of {config.entrants} created and round 1 "
            f"requested ({playsite.backlog} games waiting) in {time.monotonic() - started:.0f} s; "
            f"{'every service has read the setup' if quiet else 'the services still read the setup'}")
        pairing_only = {name: url for name, url in target.metrics.items() if name == "pairing"}
        part_series = [series for _, series in PAIRING_PARTS]
        niced = nice_off_path(target.off_path_pids, config.off_path_nice, "rates", say)
        for rate in config.rates:
            playsite.result_rate = float(rate)
            before = await Reading.read(target.metrics)
            own_cpu_before = time.process_time()
            finished_before = playsite.stats.finished
            rated_before = watch.count
            sent_before = set(playsite.result_sent)
            ticks = host_cpu_ticks()
            began = time.monotonic()
            await asyncio.sleep(config.stage_seconds)
            ended = time.monotonic()
            elapsed = ended - began
            host = host_load(ticks, host_cpu_ticks())
            after = await Reading.read(target.metrics)
            own_cpu = time.process_time() - own_cpu_before
            finished = playsite.stats.finished - finished_before
            games = [g for g in playsite.result_sent if g not in sent_before]
            await asyncio.sleep(1.0)  # let the last results of the stage reach the rating service
            drained = await Reading.read(pairing_only, infrastructure=False)
            pairing_consumed = (drained.consumed("pairing", events.GAME_FINISHED.name)
                                - before.consumed("pairing", events.GAME_FINISHED.name))
            parts = mean_ms(before.histograms("pairing", part_series), drained.histograms("pairing", part_series))
            stats = playsite.stats
            paired = of_results_in(stats.pairing_latency_times, stats.pairing_latencies, began, ended)
            delivered = [stats.delivery_latencies[i] for i in paired]
            stage = {
                "offered_results_per_s": rate, "seconds": round(elapsed, 1),
                "results_per_s": round(finished / elapsed, 1),
                "pairing_consumed_per_s": round(pairing_consumed / (elapsed + 1.0), 1),
                "rating_updates_per_s": round((watch.count - rated_before) / (elapsed + 1.0), 1),
                "backlog_at_end": playsite.backlog,
                "result_to_next_pairing_ms": _pct(sorted(stats.pairing_latencies[i] for i in paired)),
                "result_to_next_pairing_by_second": by_second(
                    [stats.pairing_latency_times[i] for i in paired], [stats.pairing_latencies[i] for i in paired],
                    began),
                "requested_to_play_site_ms": _pct(sorted(d for d in delivered if d is not None)),
                # The simulated play site runs in this process, on the same two cores as the system.
                "bench_process_cpu_percent": round(own_cpu / elapsed * 100, 1),
                "result_to_rating_updated_ms": latency_ms(playsite.result_sent, watch.first_seen, games),
                "cpu_percent": _cpu(before.cpu(), after.cpu(), elapsed),
                # Wall time each service's event loop spent collecting garbage (part of its CPU above).
                "gc_percent": _cpu(before.collecting(), after.collecting(), elapsed),
                "pairing_parts_mean_ms": {label: parts.get(series) for label, series in PAIRING_PARTS},
                "off_path_nice": niceness_run_at(niced, config.off_path_nice),
                "host": host,
            }
            stages.append(stage)
            say(f"rates: offered {rate}/s -> {stage['results_per_s']}/s results, next pairing "
                f"{stage['result_to_next_pairing_ms']} (of which request -> play site "
                f"{stage['requested_to_play_site_ms']}), rating {stage['result_to_rating_updated_ms']}, "
                f"play site CPU {stage['bench_process_cpu_percent']}%, garbage collection % {stage['gc_percent']}; "
                f"inside pairing, means in ms: "
                f"{stage['pairing_parts_mean_ms']}; {_host_words(host)}")
            if playsite.backlog == 0 and finished / elapsed < 0.5 * rate:
                say("rates: the system supplies no more games than this; higher rates are not tried")
                break
    finally:
        playsite.result_rate = 0.0
        put_back(niced, config.off_path_nice, "rates", say)
        await watch.stop()
        await playsite.stop()
    return stages


async def round_burst(target: Target, config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    """Whole rounds of many round robins finish at once: how fast standings and ratings take the results.

    The round's games are started first (their GameStarted committed by every group that reads
    them, as they would be minutes before a round's last result). Then every result of the round
    is published in one go; measured from then (from the moment the play site hands the first
    event to Kafka, after building them all): when pairing's group has committed them all (it
    commits a batch once it has scored its games and the standings; the last of a round pairs the
    next), when the rating service has published the last of their RatingUpdated, and when the
    next round has reached the play site. The rates counted from the start of the building are
    kept beside them. `burst_rounds` rounds go one after the other, each once the previous one's
    next round has reached the play site; the figures are the medians over the rounds, each
    round's are kept.
    """
    if config.burst_tournaments <= 0 or not target.groups_reading(events.GAME_FINISHED.name, ["pairing"]):
        return {}
    prefix = f"bb{uuid.uuid4().hex[:4]}-"
    playsite = PlaySite(target.kafka, target.time_source, Profiles(seed=config.seed), PlaySiteConfig(
        seed=config.seed, group_id=f"{prefix}playsite", instant_results=True, requests_only=True,
        player_prefix=prefix))
    playsite.holding = True
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    committed = CommittedOffsets(target.kafka)
    rounds: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as running:
        # Each is stopped only if it started, in the reverse order.
        for part in (playsite, watch, committed):
            await part.start()
            running.push_async_callback(part.stop)
        created, expected = await first_round_requested(target, playsite, config.burst_tournaments,
                                                        config.entrants, prefix, share=1.0, patience=90)
        say(f"burst: {len(created)} round robins of {config.entrants}; round 1 requested "
            f"({playsite.backlog} of {expected} games)")
        niced = nice_off_path(off_path_after_rates(target), config.off_path_nice, "burst", say)
        running.callback(put_back, niced, config.off_path_nice, "burst", say)
        for number in range(1, max(1, config.burst_rounds) + 1):
            one = await _one_burst(target, config, playsite, watch, committed)
            one["off_path_nice"] = niceness_run_at(niced, config.off_path_nice)
            rounds.append(one)
            say(f"burst, round {number}: its games started and read in {one['started_in_seconds']} s; "
                f"{one['results']} results built in {one['built_in_seconds']} s, published "
                f"at {one['published_per_s']}/s; standings took them at {one['standings_per_s']}/s, ratings at "
                f"{one['rated_per_s']}/s (counting the building: {one['standings_per_s_with_building']}/s and "
                f"{one['rated_per_s_with_building']}/s); next round requested {one['next_round_requested']} games; "
                f"play site CPU {one['bench_process_cpu_percent']}%; {_host_words(one['host'])}")
            if one["next_round_requested"] < one["results"]:
                break  # the next round did not all reach the play site in time: nothing whole to release
    return burst_medians(len(created), rounds) if rounds else {}


# The burst's figures given as the median over its rounds (the rest are the last round's).
_BURST_MEDIANS = ("built_in_seconds", "published_per_s", "standings_per_s", "rated_per_s",
                  "standings_per_s_with_building", "rated_per_s_with_building")


def burst_medians(tournaments: int, rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The burst's report: the last round's figures, its rates replaced by their medians over `rounds`."""
    result: dict[str, Any] = {"tournaments": tournaments, **rounds[-1]}
    for figure in _BURST_MEDIANS:
        values = [one[figure] for one in rounds if one[figure] is not None]
        result[figure] = round(statistics.median(values), 3 if figure == "built_in_seconds" else 1) if values else None
    result["rounds"] = list(rounds)
    return result


async def _one_burst(target: Target, config: BenchConfig, playsite: PlaySite, watch: RatingWatch,
                     committed: CommittedOffsets) -> dict[str, Any]:
    """Start every held game, then release their results at once and time how standings and ratings take them."""
    started, start_seconds = await _start_held_round(target, playsite, committed, config.drain_seconds)
    # A round's results come minutes after its requests and starts: released while a service still
    # read those (the clock the round's requests, rating the last round's results), the burst would
    # time that leftover work as well.
    quiet = await wait_quiet(target.kafka, target.all_consumer_groups(), config.drain_seconds)
    standings = target.groups_reading(events.GAME_FINISHED.name, ["pairing"])
    before_results = await committed.totals(standings, events.GAME_FINISHED.name)
    before = await Reading.read(target.metrics)
    ticks = host_cpu_ticks()
    read_at = time.monotonic()
    own_cpu_before = time.process_time()
    release = await playsite.release_held()
    games, began, published = release.game_ids, release.publishing, release.published
    deadline = began + config.drain_seconds
    scored_at = await committed.wait_for(standings, events.GAME_FINISHED.name, before_results, len(games),
                                         deadline - time.monotonic())
    while time.monotonic() < deadline:
        if all(g in watch.first_seen for g in games) and playsite.backlog >= len(games):
            break
        await asyncio.sleep(0.1)
    after = await Reading.read(target.metrics)
    window = time.monotonic() - read_at
    host = host_load(ticks, host_cpu_ticks())
    rated = [watch.first_seen[g] for g in games if g in watch.first_seen]

    def per_second(done_at: float | None, count: int, since: float = began) -> float | None:
        return round(count / (done_at - since), 1) if done_at is not None and count else None

    last_rated = max(rated, default=None)
    return {
        "results": len(games),
        "built_in_seconds": round(began - release.building, 3),
        "published_per_s": per_second(published, len(games)),
        "standings_per_s": per_second(scored_at, len(games)),
        "rated_per_s": per_second(last_rated, len(rated)),
        # The same, counted from the start of the play site's building of the events.
        "standings_per_s_with_building": per_second(scored_at, len(games), release.building),
        "rated_per_s_with_building": per_second(last_rated, len(rated), release.building),
        "rated_games": len(rated),
        # Before the release: the round's GameStarted, published at once, until every reader had them all;
        # the release itself started none.
        "started_before_release": started,
        "started_in_seconds": start_seconds,
        "started_with_results": release.started_with_results,
        "released_when_quiet": quiet,
        "next_round_requested": playsite.backlog,
        "cpu_percent": _cpu(before.cpu(), after.cpu(), window),
        # The play site building, publishing and reading, and the rating watch: on the same two cores.
        "bench_process_cpu_percent": round((time.process_time() - own_cpu_before) / window * 100, 1),
        "host": host,
        # How each consumer took them: its game.finished batches and their mean handling time.
        "game_finished_batches": {
            service: _batches(before.histograms(service, [GAME_FINISHED_HANDLER])[GAME_FINISHED_HANDLER],
                              after.histograms(service, [GAME_FINISHED_HANDLER])[GAME_FINISHED_HANDLER])
            for service in ("pairing", "rating") if service in target.metrics
        },
    }


async def _start_held_round(target: Target, playsite: PlaySite, committed: CommittedOffsets,
                            timeout: float) -> tuple[int, float | None]:
    """Start the held round's games and wait until every group reading game.started has them.

    A round's games start together and end minutes later, so its starts are no part of the
    burst of its results. Returns how many games started and the real seconds until every group
    had committed them (None when they did not within `timeout`).
    """
    readers = target.groups_reading(events.GAME_STARTED.name)
    before = await committed.totals(readers, events.GAME_STARTED.name)
    began = time.monotonic()
    started = await playsite.start_held()
    done = await committed.wait_for(readers, events.GAME_STARTED.name, before, started, timeout, every=0.05)
    return started, None if done is None else round(done - began, 3)


def _batches(before: tuple[float, float], after: tuple[float, float]) -> dict[str, Any]:
    """Batches handled between two (sum, count) readings of a handler histogram, and their mean in ms."""
    return {"batches": int(after[1] - before[1]), "mean_ms": mean_ms({"h": before}, {"h": after})["h"]}


def firehose_events(tag: str, players: Sequence[str], first_serial: int, count: int, rng: random.Random,
                    time_source: TimeSource) -> list[tuple[str, OutboxRecord]]:
    """`count` rated casual GameFinished records between `players`, ready to publish."""
    made = []
    for serial in range(first_serial, first_serial + count):
        white, black = rng.sample(players, 2)
        game_id = f"bf{tag}-{serial}"
        now = timestamp(time_source.now())
        event = ev.GameFinished(
            game_id=game_id, variant="international", speed=common.SPEED_BLITZ, white_id=white, black_id=black,
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL, id=game_id),
            result=rng.choice((common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_BLACK_WINS, common.GAME_RESULT_DRAW)),
            termination=common.TERMINATION_RESIGNATION, white_sat=True, black_sat=True, rated=True,
            plies=40, finished_at=now, started_at=now,
        )
        event.meta.event_id = f"{game_id}/finished"
        events.stamp_meta(event, "bench", now)
        made.append((game_id, record_of(event)))
    return made


def rate_while_offered(sent: dict[str, float], seen: dict[str, float], began: float, ended: float,
                       warm_up: float) -> float | None:
    """Games per second whose rating appeared between `warm_up` seconds after `began` and `ended`.

    What the rating service put out while the load lasted; unlike games over the whole stage,
    it does not charge the last games' latency to the throughput.
    """
    start = began + warm_up
    if ended <= start:
        return None
    rated = sum(1 for game in sent if start <= seen.get(game, -1.0) <= ended)
    return round(rated / (ended - start), 1)


async def firehose(target: Target, config: BenchConfig, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Rated results straight onto game.finished at rising rates; the rating service's sustained rate.

    Each stage's events are built before its clock starts, so the load generator, which shares
    the two cores, spends them on sending, not on building protobufs.
    """
    watch = RatingWatch(target.kafka, target.watch_fetch_wait_ms)
    await watch.start()
    producer = AIOKafkaProducer(bootstrap_servers=target.kafka, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    publish = outbox_publisher(producer)
    rng = random.Random(config.seed)
    tag = uuid.uuid4().hex[:4]
    players = [f"bf{tag}-{i:05d}" for i in range(20_000)]
    results = []
    serial = 0
    niced = nice_off_path(off_path_after_rates(target), config.off_path_nice, "firehose", say)
    try:
        for rate in config.firehose_rates:
            total = int(rate * config.firehose_seconds)
            prepared = firehose_events(tag, players, serial, total, rng, target.time_source)
            serial += total
            sent: dict[str, float] = {}
            cpu_before = (await Reading.read(target.metrics)).cpu()
            updates_before = watch.count
            ticks = host_cpu_ticks()
            began = time.monotonic()
            tick = 0.01
            done = 0
            while done < total:
                due = min(total, int((time.monotonic() - began) * rate) + 1)
                if due > done:
                    # Whole batches per partition: the load generator shares the two cores with the system.
                    await publish([record for _, record in prepared[done:due]])
                    now = time.monotonic()
                    for game_id, _ in prepared[done:due]:
                        sent[game_id] = now
                    done = due
                await asyncio.sleep(tick)
            offered_seconds = time.monotonic() - began
            await wait_until(lambda: sum(1 for g in sent if g in watch.first_seen) >= len(sent), config.drain_seconds)
            drained = time.monotonic() - began
            cpu_after = (await Reading.read(target.metrics)).cpu()
            host = host_load(ticks, host_cpu_ticks())
            seen = sum(1 for g in sent if g in watch.first_seen)
            stage = {
                "offered_results_per_s": rate, "sent": len(sent),
                "achieved_send_per_s": round(len(sent) / offered_seconds, 1),
                "rated_games": seen, "rated_games_per_s": round(seen / drained, 1),
                "rated_per_s_while_offered": rate_while_offered(
                    sent, watch.first_seen, began, began + offered_seconds, FIREHOSE_WARM_UP_SECONDS),
                "rating_updates": watch.count - updates_before,
                "result_to_rating_updated_ms": latency_ms(sent, watch.first_seen, list(sent)),
                "cpu_percent": _cpu(cpu_before, cpu_after, drained),
                "off_path_nice": niceness_run_at(niced, config.off_path_nice),
                "host": host,
            }
            results.append(stage)
            say(f"firehose: offered {rate}/s -> rating put out {stage['rated_per_s_while_offered']} games/s while "
                f"offered, {stage['rated_games_per_s']} games/s over the stage and its drain, "
                f"latency {stage['result_to_rating_updated_ms']}; {_host_words(host)}")
    finally:
        put_back(niced, config.off_path_nice, "firehose", say)
        await producer.stop()
        await watch.stop()
    return results


def of_results_in(taken_at: Sequence[float], latencies: Sequence[float], began: float, ended: float) -> list[int]:
    """Indices of the latency samples whose result was published in [began, ended): a stage's own.

    A sample is taken when the next round's first request arrives, its latency after the result.
    Taken by when they were measured, a stage would count the previous stage's late samples as
    its own and hand its own late ones to the next.
    """
    return [i for i, (at, latency) in enumerate(zip(taken_at, latencies, strict=True))
            if began <= at - latency < ended]


def by_second(times: Sequence[float], values: Sequence[float], began: float) -> list[dict[str, Any]]:
    """Samples grouped by the whole second of the stage they were taken in: count, p50 and max (ms).

    A stage's p99 alone cannot tell a steady tail from one stall; this shows when the slow ones came.
    """
    seconds: dict[int, list[float]] = {}
    for at, value in zip(times, values, strict=True):
        seconds.setdefault(int(at - began), []).append(value)
    timeline = []
    for second in sorted(seconds):
        ordered = sorted(seconds[second])
        timeline.append({"second": second, "samples": len(ordered), "p50": round(percentile(ordered, 50) * 1000, 1),
                         "max": round(ordered[-1] * 1000, 1)})
    return timeline


def _pct(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"samples": 0, "p50": None, "p99": None}
    return {"samples": len(values), "p50": round(percentile(values, 50) * 1000, 1),
            "p99": round(percentile(values, 99) * 1000, 1)}


def _cpu(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    return {name: round((after[name] - before.get(name, 0.0)) / seconds * 100, 1)
            for name in after if name in before and after[name]}


def _host_words(host: dict[str, Any] | None) -> str:
    """A stage's `host_load` as people read it."""
    if not host or host.get("busy_percent") is None:
        return "machine load unknown"
    return (f"machine busy {host['busy_percent']}% of {host['cores'] * 100}, "
            f"{host['stolen_percent']}% stolen by the host")


async def run_bench(target: Target, config: BenchConfig, say: Callable[[str], None] = print) -> Report:
    """Every stage, in order; a failing stage is noted and the next one still runs."""
    report = Report(machine={
        "cpus": os.cpu_count(), "time_scale": target.time_source.scale, "python_loop_ns": python_loop_ns(),
        "event_loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
        "socket_round_trip_us": {"same_cpu": socket_round_trip_us((0, 0)),
                                 "across_cpus": socket_round_trip_us((0, 1))},
        "config": asdict(config),
    })
    ticks_before = host_cpu_ticks()
    for name, stage in (
        ("raw kafka", lambda: raw_kafka(target.kafka, config.raw_messages, config.raw_message_bytes)),
        ("raw redis", lambda: raw_redis(target.redis_url, config.redis_ops)),
    ):
        try:
            result = await stage()
        except Exception as error:  # a benchmark reports what failed and carries on
            report.notes.append(f"{name}: {error!r}")
            continue
        report.raw[name.split()[1]] = result
        say(f"{name}: {result}")
    for name, runner in (("played", played_stage), ("rates", rate_stages), ("burst", round_burst),
                         ("firehose", firehose)):
        try:
            result = await runner(target, config, say)
        except (grpc.aio.AioRpcError, OSError, TimeoutError, RuntimeError) as error:
            report.notes.append(f"{name}: {error!r}")
            say(f"{name}: failed: {error!r}")
            continue
        if name == "played":
            report.played = result
        elif name == "rates":
            report.stages = result
        elif name == "burst":
            report.burst = result
        else:
            report.firehose = result
    report.machine["stolen_percent"] = stolen_percent(ticks_before, host_cpu_ticks())
    return report


def _off_path_words(stage: Mapping[str, Any]) -> str:
    nice = stage.get("off_path_nice")
    return f", the services off its path at niceness {nice}" if nice else ""


def summary(report: Report) -> str:
    """The figures as people read them."""
    machine = report.machine
    trips = machine.get("socket_round_trip_us") or {}
    lines = [f"machine: {machine.get('cpus')} CPUs; compare runs by: {machine.get('python_loop_ns')} ns per Python "
             f"loop step, a socket round trip {trips.get('same_cpu')} us on one CPU and {trips.get('across_cpus')} us "
             f"across two, {machine.get('stolen_percent')}% of CPU time stolen by the host during the run; "
             f"time scale x{machine.get('time_scale')}; event loop {machine.get('event_loop')}"]
    if machine.get("kafka_fetch_wait_ms"):
        lines.append(f"kafka fetch wait, ms per consumer process: {machine['kafka_fetch_wait_ms']}")
    if machine.get("kafka_fetch_min_bytes"):
        lines.append(f"kafka fetch min bytes per consumer process: {machine['kafka_fetch_min_bytes']}")
    kafka, redis_rates = report.raw.get("kafka", {}), report.raw.get("redis", {})
    if kafka:
        lines.append(f"raw kafka: produce {kafka['produce_per_s']:,}/s ({kafka['produce_mb_per_s']} MB/s), "
                     f"consume {kafka['consume_per_s']:,}/s ({kafka['bytes']} B records)")
    if redis_rates:
        lines.append(f"raw redis: pipelined {redis_rates['pipelined_ops_per_s']:,} ops/s, "
                     f"one round trip at a time {redis_rates['round_trip_ops_per_s']:,} ops/s")
    if report.played:
        p = report.played
        lines.append(f"played games (random moves, no think time): {p['moves_per_s']} moves/s, "
                     f"{p['results_per_s']} results/s; result -> next pairing {p['result_to_next_pairing_ms']}")
        lines.append(f"  CPU %: {p['cpu_percent']}")
    if report.stages:
        every = (machine.get("config") or {}).get("result_every_ms")
        published = f" published every {every} ms" if every else ""
        lines.append(f"tournament results at rising offered rates (instant results{published}, round robins of 16"
                     f"{_off_path_words(report.stages[0])}):")
        lines.append(f"  {'offered':>8} {'results/s':>9} {'pairing/s':>9} {'rating upd/s':>12} "
                     f"{'next pairing p50/p99 ms':>24} {'of it, delivery p50/p99':>24} "
                     f"{'rating updated p50/p99 ms':>26}  CPU % per service and server (+ play site)")
        for s in report.stages:
            np, ru = s["result_to_next_pairing_ms"], s["result_to_rating_updated_ms"]
            delivery = s.get("requested_to_play_site_ms", {"p50": None, "p99": None})
            lines.append(f"  {s['offered_results_per_s']:>8} {s['results_per_s']:>9} {s['pairing_consumed_per_s']:>9} "
                         f"{s['rating_updates_per_s']:>12} {str(np['p50']) + ' / ' + str(np['p99']):>24} "
                         f"{str(delivery['p50']) + ' / ' + str(delivery['p99']):>24} "
                         f"{str(ru['p50']) + ' / ' + str(ru['p99']):>26}  {s['cpu_percent']} "
                         f"(+ {s.get('bench_process_cpu_percent')})")
            if s.get("gc_percent"):
                lines.append(f"  {'':>8} of that CPU, garbage collection %: {s['gc_percent']}")
            if s.get("host"):
                lines.append(f"  {'':>8} {_host_words(s['host'])}")
        lines.append("  (delivery: from the pairing service stamping a request to the play site handling it)")
    if report.burst:
        b = report.burst
        each = b["rounds"]
        lines.append(f"a whole round at once ({b['tournaments']} round robins{_off_path_words(b)}, their games started "
                     f"first and read in {b['started_in_seconds']} s, {b['results']} results built in "
                     f"{b['built_in_seconds']} s and published at {b['published_per_s']}/s; medians of "
                     f"{len(each)} rounds): from the first publication standings took them at "
                     f"{b['standings_per_s']}/s, ratings at {b['rated_per_s']}/s "
                     f"({b['standings_per_s_with_building']}/s and {b['rated_per_s_with_building']}/s "
                     f"from the start of the building); last round: {b['rated_games']} rated, next round requested "
                     f"{b['next_round_requested']} games, CPU % {b['cpu_percent']}, play site CPU "
                     f"{b['bench_process_cpu_percent']}%, game.finished batches "
                     f"{b['game_finished_batches']}; {_host_words(b.get('host'))}")
        if len(each) > 1:
            per_round = ", ".join(f"{r['standings_per_s']} / {r['rated_per_s']}" for r in each)
            lines.append(f"  each round, standings / ratings per s: {per_round}")
    if report.firehose:
        lines.append(f"results straight onto game.finished (rating service throughput"
                     f"{_off_path_words(report.firehose[0])}):")
        for f in report.firehose:
            ru = f["result_to_rating_updated_ms"]
            lines.append(f"  offered {f['offered_results_per_s']:>6}/s sent {f['achieved_send_per_s']:>8}/s -> rated "
                         f"{f['rated_per_s_while_offered']}/s while offered ({f['rated_games_per_s']}/s over the stage "
                         f"and its drain), result -> rating updated p50 {ru['p50']} ms p99 {ru['p99']} ms; "
                         f"CPU % {f['cpu_percent']}; {_host_words(f.get('host'))}")
    lines += targets(report)
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def targets(report: Report) -> list[str]:
    """The issue's two targets against what was measured."""
    lines = ["targets (2-core machine):"]
    through_pairing = max((min(s["results_per_s"], s["pairing_consumed_per_s"]) for s in report.stages), default=0.0)
    rating_alone = max((f["rated_per_s_while_offered"] or 0.0 for f in report.firehose), default=0.0)
    lines.append(f"  >= 5,000 game results/s through rating and standings: measured {through_pairing} results/s "
                 f"through pairing (standings) and rating while each result brings the next game; rating alone "
                 f"{rating_alone} games/s")
    if report.burst:
        b = report.burst
        host = f"; last round: {_host_words(b['host'])}" if b.get("host") else ""
        lines.append(f"    a whole round of {b['results']} results at once: standings {b['standings_per_s']}/s, "
                     f"ratings {b['rated_per_s']}/s from its first publication (medians of "
                     f"{len(b['rounds'])} rounds){host}")
    near = [s for s in report.stages if s["offered_results_per_s"] == 1000] or report.stages[-1:]
    for s in near:
        np = s["result_to_next_pairing_ms"]
        host = f"; {_host_words(s['host'])}" if s.get("host") else ""
        lines.append(f"  p99 result -> next pairing <= 100 ms at 1,000 results/s: measured p99 {np['p99']} ms "
                     f"(p50 {np['p50']} ms) with {s['offered_results_per_s']}/s offered, "
                     f"{s['results_per_s']}/s achieved{host}")
    return lines


def write_json(report: Report, path: str) -> None:
    """Write the report as JSON."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(asdict(report), handle, indent=2)
