"""A batch consumer's poll (kit): an idle consumer waits in the poll itself, so a record after a quiet spell comes at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from aiokafka import AIOKafkaProducer

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import make_broker, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.settings import KitSettings


def _settings(infra_env, poll_ms: int) -> KitSettings:
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_heartbeat_interval_ms=500,
        kafka_fetch_max_wait_ms=20, kafka_batch_poll_ms=poll_ms,
    )


async def _caught_up(subscriber: Any, timeout: float = 30.0) -> None:
    """Wait until the consumer has its partitions and has read what earlier tests left on them."""
    deadline = time.monotonic() + timeout
    consumer = subscriber.consumer
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer got no partition"
        await asyncio.sleep(0.05)
    ends = await consumer.end_offsets(list(consumer.assignment()))
    for partition, end in ends.items():
        while await consumer.position(partition) < end:
            assert time.monotonic() < deadline, "the consumer did not read the topic's history"
            await asyncio.sleep(0.05)


async def test_a_record_after_a_quiet_spell_is_handled_within_the_fetch_wait_not_after_a_sleep(infra_env) -> None:
    """FastStream slept a whole poll after each empty one: a record landing then waited up to that long."""
    settings = _settings(infra_env, poll_ms=1000)
    tag = uuid.uuid4().hex[:8]
    broker = make_broker(settings, "kit_poll", Metrics("kit_poll"))
    arrived: dict[str, float] = {}

    async def on_finished(batch: list[ev.GameFinished]) -> str:
        now = time.monotonic()
        for event in batch:
            if event.game_id.startswith(tag):
                arrived.setdefault(event.game_id, now)
        return "handled"

    subscriber = subscribe_many(broker, settings, Metrics("kit_poll"), {events.GAME_FINISHED: on_finished},
                                f"kit-poll-{tag}")
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        await _caught_up(subscriber)
        waits = []
        # Quiet spells of different lengths land each record at another point of the poll cycle;
        # with a sleep of a whole poll after each empty one, about half would have waited in it.
        for number, quiet in enumerate((1.3, 1.7, 1.45, 1.9, 1.15, 1.6)):
            await asyncio.sleep(quiet)
            game_id = f"{tag}-{number}"
            await producer.send_and_wait("game.finished", ev.GameFinished(game_id=game_id).SerializeToString(),
                                         key=game_id.encode())
            sent = time.monotonic()
            while game_id not in arrived:
                assert time.monotonic() - sent < 10, f"{game_id} never handled"
                await asyncio.sleep(0.005)
            waits.append(arrived[game_id] - sent)
        assert max(waits) < 0.4, f"seconds from acknowledgement to handler: {waits}"
    finally:
        await producer.stop()
        await broker.stop()


async def test_an_idle_consumer_polls_once_per_poll_time(infra_env) -> None:
    """Neither a spin nor FastStream's poll-then-sleep: about one poll per KAFKA_BATCH_POLL_MS."""
    settings = _settings(infra_env, poll_ms=200)
    tag = uuid.uuid4().hex[:8]
    broker = make_broker(settings, "kit_poll_idle", Metrics("kit_poll_idle"))

    async def on_abandoned(batch: list[ev.GameAbandoned]) -> str:
        return "handled"

    subscriber = subscribe_many(broker, settings, Metrics("kit_poll_idle"), {events.GAME_ABANDONED: on_abandoned},
                                f"kit-poll-idle-{tag}")
    await broker.start()
    try:
        await _caught_up(subscriber)
        consumer = subscriber.consumer
        polls = [0]
        getmany = consumer.getmany

        async def counted(*args: Any, **kwargs: Any) -> Any:
            polls[0] += 1
            return await getmany(*args, **kwargs)

        consumer.getmany = counted
        await asyncio.sleep(3.0)
        # 15 polls of 200 ms fit in 3 s; FastStream's own loop made 7 or 8, a spin thousands.
        assert 12 <= polls[0] <= 17, polls[0]
    finally:
        await broker.stop()
