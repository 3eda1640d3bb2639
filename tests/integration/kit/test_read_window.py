"""Reading a time window of a topic outside any group (kit.kafka.read_window), on the session's real broker."""

from __future__ import annotations

import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import Topic
from arbiter.kit.kafka import read_window
from arbiter.kit.settings import KitSettings

MINUTE_MS = 60_000


def _settings(infra_env: dict[str, str]) -> KitSettings:
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_fetch_max_wait_ms=50,
    )


async def _new_topic(bootstrap: str, partitions: int) -> Topic:
    name = f"kit.window.{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()
    return Topic(name, ev.GameStarted, "game_id")


async def _produce(bootstrap: str, topic: Topic, stamped: list[tuple[int, str, int]]) -> None:
    """(partition, game id, timestamp ms) records, sent together so that each partition gets batches of several."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        sent = [await producer.send(topic.name, ev.GameStarted(game_id=game_id).SerializeToString(),
                                    partition=partition, timestamp_ms=stamp)
                for partition, game_id, stamp in stamped]
        for delivery in sent:
            await delivery
    finally:
        await producer.stop()


async def test_only_the_records_stamped_inside_the_window_are_passed_decoded(infra_env) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 3)
    now = int(time.time() * 1000)
    since, until = now - 30 * MINUTE_MS, now - 5 * MINUTE_MS
    stamped = [
        # Partition 0: older records, the window, then records past its end (the live consumers' share).
        *((0, f"old-{i}", since - (3 - i) * MINUTE_MS) for i in range(3)),
        *((0, f"in-{i}", since + i * MINUTE_MS) for i in range(4)),
        *((0, f"late-{i}", until + i) for i in range(3)),
        # Partition 1: only the window, so it is done when it runs out, not when a late record shows.
        *((1, f"tail-{i}", until - 1 - i) for i in range(5)),
        # Partition 2 stays empty.
    ]
    await _produce(settings.kafka_bootstrap_servers, topic, stamped)
    batches: list[list[ev.GameStarted]] = []

    async def handle(batch: list[ev.GameStarted]) -> None:
        batches.append(batch)

    passed = await read_window(settings, topic, since, until, handle, client_id="kit-window-test",  # type: ignore[arg-type]
                               max_records=3)
    got = [event.game_id for batch in batches for event in batch]
    assert sorted(got) == sorted([f"in-{i}" for i in range(4)] + [f"tail-{i}" for i in range(5)])
    assert passed == len(got)
    assert all(isinstance(event, ev.GameStarted) for batch in batches for event in batch)
    # Within a partition the order of the log is kept.
    assert [g for g in got if g.startswith("in-")] == [f"in-{i}" for i in range(4)]
    assert [g for g in got if g.startswith("tail-")] == [f"tail-{i}" for i in range(5)]


async def test_an_empty_window_or_a_missing_topic_passes_nothing(infra_env) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 2)
    now = int(time.time() * 1000)
    await _produce(settings.kafka_bootstrap_servers, topic, [(0, "before", now - 10 * MINUTE_MS), (1, "after", now)])
    calls: list[int] = []

    async def handle(batch: list[ev.GameStarted]) -> None:
        calls.append(len(batch))

    assert await read_window(settings, topic, now - 5 * MINUTE_MS, now - MINUTE_MS, handle,  # type: ignore[arg-type]
                             client_id="kit-window-test") == 0
    missing = Topic(f"kit.window.none.{uuid.uuid4().hex[:8]}", ev.GameStarted, "game_id")
    assert await read_window(settings, missing, 0, now, handle, client_id="kit-window-test") == 0  # type: ignore[arg-type]
    assert calls == []


@pytest.mark.parametrize("failing_at", [1, 2])
async def test_a_failing_handler_stops_the_read_and_its_error_comes_out(infra_env, failing_at: int) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 1)
    now = int(time.time() * 1000)
    await _produce(settings.kafka_bootstrap_servers, topic, [(0, f"g{i}", now - 60_000 + i) for i in range(6)])
    calls = 0

    async def handle(batch: list[ev.GameStarted]) -> None:
        nonlocal calls
        calls += 1
        if calls == failing_at:
            raise RuntimeError("the cache is down")

    with pytest.raises(RuntimeError, match="the cache is down"):
        await read_window(settings, topic, now - 120_000, now, handle, client_id="kit-window-test",  # type: ignore[arg-type]
                          max_records=2)
    assert calls == failing_at
