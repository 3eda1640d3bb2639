"""A play site notices that the broker lost its storage (brokerloss.anchor_held) on a real tansu, SIGKILLed
and started again empty on its port, and not while it keeps it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from arbiter_tools.devstack.infra import start_tansu
from arbiter_tools.devstack.processes import free_port, wait_for_port
from arbiter_tools.simulator.playsite.brokerloss import Anchor, anchor_held

TOPIC = "game.moved"


async def produce(bootstrap: str, event_ids: list[str], topic: str = TOPIC) -> list[Anchor]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        anchors = []
        for event_id in event_ids:
            taken = await producer.send_and_wait(topic, b"x", key=b"g1", headers=[("event-id", event_id.encode())])
            anchors.append(Anchor(TopicPartition(taken.topic, taken.partition), taken.offset, event_id, 0.0))
        return anchors
    finally:
        await producer.stop()


def test_an_anchor_is_held_until_the_broker_loses_its_storage(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    tansu = start_tansu(port, tmp_path / "tansu.log")

    async def scenario() -> None:
        first, middle, last = await produce(bootstrap, ["e1", "e2", "e3"])
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            assert [await anchor_held(consumer, a) for a in (first, middle, last)] == [True, True, True]

            tansu.kill()
            assert await anchor_held(consumer, first) is None  # no broker: no answer, not a loss
            tansu.start()
            wait_for_port("127.0.0.1", port, 30, tansu)
            assert await anchor_held(consumer, middle) is False  # the topic is gone with the broker
            await produce(bootstrap, ["n1"])
            # The topic made again: another event at the first offset, none at the later ones.
            assert [await anchor_held(consumer, a) for a in (first, last)] == [False, False]
            # A topic the consumer was never assigned, made after it started: held, not taken for lost.
            (other,) = await produce(bootstrap, ["o1"], topic="game.started")
            assert await anchor_held(consumer, other) is True
        finally:
            await consumer.stop()

    try:
        asyncio.run(scenario())
    finally:
        tansu.stop()
