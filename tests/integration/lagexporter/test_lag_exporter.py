"""The lag exporter as a process on the session's broker: what it serves is what the broker holds.

Records are produced in batches (a producer that lingers), so that on tansu, whose high watermark
stops at the first record of a partition's last batch, the ends it serves must come from reading
that batch. A consumer group commits part of what it read; the exporter must serve each
partition's true end, the group's committed offsets and the difference, under kafka-exporter's
names, and follow both as they move. With no broker to ask it serves no sample at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from arbiter_tools.devstack.infra import create_topic
from arbiter_tools.devstack.processes import ManagedProcess, free_port, wait_for_port
from tests.support.polling import eventually_blocking

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def scrape(port: int) -> Samples:
    """Every sample of the exporter's /metrics, by name, then by sorted labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Callable[..., tuple[int, Path]]]:
    """`exporter(bootstrap, **env)`: a lag exporter process polling every 0.2 s; returns its metrics port and log."""
    processes: list[ManagedProcess] = []

    def start(bootstrap: str, **env: str) -> tuple[int, Path]:
        port = free_port()
        process = ManagedProcess("lag-exporter", [sys.executable, "-m", "arbiter_tools.lagexporter"],
                                 tmp_path / f"lag-exporter-{len(processes)}.log", env={
                                     **os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "METRICS_PORT": str(port),
                                     "LAG_EXPORTER_POLL_SECONDS": "0.2", **env}).start()
        processes.append(process)
        wait_for_port("127.0.0.1", port, 30, process)
        return port, process.log_path

    yield start
    for process in processes:
        assert process.stop(signal.SIGINT) == 0, f"the exporter did not stop cleanly; see {process.log_path}"


async def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    """Records in batches of several (the producer lingers), `per_partition[p]` records to partition p."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=100)
    await producer.start()
    try:
        sent = [await producer.send(topic, b"x", partition=partition)
                for partition, count in per_partition.items() for _ in range(count)]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def commit(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> None:
    """Commit `offsets` for `group` as its consumer would, having read that far."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        await consumer.commit({tp: OffsetAndMetadata(offset, "") for tp, offset in offsets.items()})
    finally:
        await consumer.stop()


@contextlib.contextmanager
def member_of(bootstrap: str, group: str, topic: str) -> Iterator[None]:
    """A consumer that has joined `group` (reading `topic`) and stays in it while the block runs."""
    joined, leave = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    async def stay() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                    session_timeout_ms=6000, heartbeat_interval_ms=1000)
        await consumer.start()
        try:
            while not consumer.assignment():
                await consumer.getmany(timeout_ms=100, max_records=1)  # drives the join; nothing is committed
            joined.set()
            await asyncio.to_thread(leave.wait)
        finally:
            await consumer.stop()

    def run() -> None:
        try:
            asyncio.run(stay())
        except BaseException as error:
            failure.append(error)
            joined.set()

    thread = threading.Thread(target=run, name=f"member-of-{group}")
    thread.start()
    try:
        assert joined.wait(60) and not failure, f"could not join {group}: {failure}"
        yield
    finally:
        leave.set()
        thread.join(timeout=60)


def test_ends_commits_and_lag_are_the_brokers_and_follow_it(kafka_bootstrap: str, exporter) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, group, other = f"lagx-{tag}", f"lagx-{tag}.rating", f"lagx-{tag}.pairing"
    asyncio.run(create_topic(kafka_bootstrap, topic, 2))
    asyncio.run(produce(kafka_bootstrap, topic, {0: 7, 1: 4}))
    asyncio.run(commit(kafka_bootstrap, group, {TopicPartition(topic, 0): 3}))
    # A second group: every group is described (a client that reads several in one answer wrongly fails here).
    asyncio.run(commit(kafka_bootstrap, other, {TopicPartition(topic, 1): 4}))
    port, _log = exporter(kafka_bootstrap, LAG_EXPORTER_TOPIC_FILTER=f"^{topic}$",
                          LAG_EXPORTER_GROUP_FILTER=f"^lagx-{tag}[.]")
    with member_of(kafka_bootstrap, other, topic):
        check_the_first_look(port, topic, group, other)

    asyncio.run(produce(kafka_bootstrap, topic, {0: 5}))
    asyncio.run(commit(kafka_bootstrap, group, {TopicPartition(topic, 0): 10, TopicPartition(topic, 1): 4}))
    eventually_blocking(served(port, {
        "kafka_topic_partition_current_offset": {on(topic, 0): 12, on(topic, 1): 4},
        "kafka_consumergroup_current_offset": {of(group, topic, 0): 10, of(group, topic, 1): 4},
        "kafka_consumergroup_lag": {of(group, topic, 0): 2, of(group, topic, 1): 0},
    }), "the ends and commits after more records and commits")


def on(topic: str, partition: int) -> tuple[tuple[str, str], ...]:
    return (("partition", str(partition)), ("topic", topic))


def of(group: str, topic: str, partition: int) -> tuple[tuple[str, str], ...]:
    return (("consumergroup", group), ("partition", str(partition)), ("topic", topic))


def served(port: int, expected: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> Callable[[], bool]:
    """Whether the exporter serves every sample of `expected` with its value."""
    def check() -> bool:
        found = scrape(port)
        return all(found.get(name, {}).get(labels) == value
                   for name, values in expected.items() for labels, value in values.items())
    return check


def check_the_first_look(port: int, topic: str, group: str, other: str) -> None:
    """Ends past tansu's high watermark, each group's commits and lag, and `other`'s one live member."""
    eventually_blocking(served(port, {
        "kafka_topic_partition_current_offset": {on(topic, 0): 7, on(topic, 1): 4},
        "kafka_topic_partition_oldest_offset": {on(topic, 0): 0, on(topic, 1): 0},
        "kafka_topic_partitions": {(("topic", topic),): 2},
        "kafka_consumergroup_current_offset": {of(group, topic, 0): 3, of(group, topic, 1): -1},
        "kafka_consumergroup_lag": {of(group, topic, 0): 4, of(group, topic, 1): -1},
        "kafka_consumergroup_lag_sum": {(("consumergroup", group), ("topic", topic)): 4,
                                        (("consumergroup", other), ("topic", topic)): 0},
        "kafka_consumergroup_members": {(("consumergroup", group),): 0, (("consumergroup", other),): 1},
    }), "the first ends, commits, lags and members")
    found = scrape(port)
    assert len(found["kafka_consumergroup_lag"]) == 4, "two groups on two partitions, no one else's"
    assert found["kafka_brokers"][()] >= 1


def test_without_a_broker_nothing_is_served_but_the_families(exporter) -> None:
    nobody = free_port()
    port, log = exporter(f"127.0.0.1:{nobody}", LAG_EXPORTER_TIMEOUT_SECONDS="2")
    eventually_blocking(lambda: "the broker does not answer" in log.read_text(),
                        "its word that the broker does not answer")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    assert "# TYPE kafka_consumergroup_lag gauge" in text
    found = scrape(port)
    assert not {name for name in found if name.startswith("kafka_")}, "a stale or made-up sample is served"
