"""What the benchmark reads of the running system, never asserting a timing.

The services' /metrics, the consumer groups' committed offsets, the rating updates as they are
published, and the waits for the system to settle between stages.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import topic_partitions
from arbiter_tools.chaos import group_lag
from arbiter_tools.simulator.bench.host import infrastructure_cpu_seconds
from arbiter_tools.simulator.scenario import percentile

log = logging.getLogger(__name__)



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
