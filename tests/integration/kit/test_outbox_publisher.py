"""The relay's batch publisher (kit): partitions as `send` picks them, headers kept, order kept per key."""

from __future__ import annotations

import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.partitioner import murmur2

from arbiter.kit.kafka import outbox_publisher
from arbiter.kit.outbox import OutboxRecord
from arbiter_tools.devstack.infra import create_topic


async def test_records_land_where_send_would_put_them_in_order_with_headers(infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    topic = await create_topic(bootstrap, f"kit.publisher.{uuid.uuid4().hex[:8]}", 4)
    # Big enough that some partitions need more than one producer batch.
    records = [OutboxRecord(i, topic, f"key-{i % 7}", bytes(20_000) + str(i).encode(), f"e-{i}", "Test")
               for i in range(120)]
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=64 * 1024)
    await producer.start()
    try:
        await outbox_publisher(producer)(records)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    seen = []
    try:
        while len(seen) < len(records):
            for batch in (await consumer.getmany(timeout_ms=2000)).values():
                seen.extend(batch)
    finally:
        await consumer.stop()
    assert len(seen) == len(records)
    for message in seen:
        assert message.partition == (murmur2(message.key) & 0x7FFFFFFF) % 4
        headers = dict(message.headers)
        assert headers["event-type"] == b"Test" and headers["event-id"].decode() == f"e-{int(message.value[20_000:])}"
    for key in {r.key for r in records}:
        order = [int(m.value[20_000:]) for m in sorted(seen, key=lambda m: m.offset) if m.key == key.encode()]
        assert order == sorted(order)
