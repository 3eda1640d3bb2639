"""The benchmark's wait for quiet on a real broker: groups behind by their uncommitted records, quiet once caught up."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from arbiter_tools.chaos import group_lag
from arbiter_tools.devstack.infra import create_topic
from arbiter_tools.simulator.bench.readings import wait_quiet


async def _scenario(bootstrap: str) -> None:
    topic, group = f"quiet-{uuid.uuid4().hex[:8]}", f"quiet-group-{uuid.uuid4().hex[:8]}"
    await create_topic(bootstrap, topic, 2)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await producer.start()
    await consumer.start()
    try:
        for partition, count in ((0, 3), (1, 2)):
            for n in range(count):
                await producer.send_and_wait(topic, f"r{n}".encode(), partition=partition)
        groups = {group: (topic,)}
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        # Nothing committed: every record is still to be read; a topic never created holds none.
        assert await group_lag(bootstrap, group, (topic,)) == 5
        assert await group_lag(bootstrap, group, (f"never-{uuid.uuid4().hex[:8]}",)) == 0
        assert not await wait_quiet(bootstrap, groups, timeout=0.3)

        await consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, ""),
                               TopicPartition(topic, 1): OffsetAndMetadata(1, "")})
        assert await group_lag(bootstrap, group, (topic,)) == 1
        assert not await wait_quiet(bootstrap, groups, timeout=0.3)

        # Caught up, and still caught up half a second later: quiet.
        await consumer.commit({TopicPartition(topic, 1): OffsetAndMetadata(2, "")})
        assert await group_lag(bootstrap, group, (topic,)) == 0
        assert await wait_quiet(bootstrap, groups, timeout=10, settle=0.2)

        # A record produced meanwhile is work again.
        await producer.send_and_wait(topic, b"late", partition=1)
        assert await group_lag(bootstrap, group, (topic,)) == 1
    finally:
        await consumer.stop()
        await producer.stop()


def test_groups_are_behind_by_their_uncommitted_records_and_quiet_once_caught_up(kafka_bootstrap: str) -> None:
    asyncio.run(_scenario(kafka_bootstrap))
