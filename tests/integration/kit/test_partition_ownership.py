"""Whether a consumer has its topics' partitions to itself (owns_every_partition, SoleConsumer), on the real broker."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from aiokafka import AIOKafkaConsumer

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import Topic
from arbiter.kit.kafka import SoleConsumer, ensure_topics, owns_every_partition
from tests.support.kafka import until_polled


def _member(bootstrap: str, group: str, topic: str) -> AIOKafkaConsumer:
    # A short session: tansu answers a JoinGroup after half of it.
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=2000,
                                heartbeat_interval_ms=400, enable_auto_commit=False)
    return consumer


async def test_a_lone_member_owns_every_partition_and_a_second_one_ends_that(infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    topic, group = f"kit.owned.{uuid.uuid4().hex[:8]}", f"kit-owned-{uuid.uuid4().hex[:8]}"
    await ensure_topics(bootstrap, 2, [Topic(topic, ev.GameStarted, "game_id")])
    assert not owns_every_partition(None)
    first = _member(bootstrap, group, topic)
    sole = SoleConsumer(lambda: SimpleNamespace(consumer=first), settle_seconds=0.5)
    await first.start()
    second = _member(bootstrap, group, topic)
    try:
        await until_polled(lambda: len(first.assignment()) == 2, [first], "the first member never got both partitions")
        assert owns_every_partition(first)
        assert not sole()  # just seen: not settled yet
        await asyncio.sleep(0.6)
        assert sole()
        await second.start()
        await until_polled(lambda: first.assignment() and second.assignment() and len(first.assignment()) == 1,
                     [first, second], "the partitions were never shared")
        assert not owns_every_partition(first) and not owns_every_partition(second)
        assert not sole()
        await second.stop()
        await until_polled(lambda: len(first.assignment()) == 2, [first], "the first member never got both back")
        assert owns_every_partition(first)
        assert not sole()  # owning again, but only since now
        await asyncio.sleep(0.6)
        assert sole()
    finally:
        await second.stop()
        await first.stop()
