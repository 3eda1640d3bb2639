"""Reading a time window of a topic outside any group (kit.kafka.read_window), on the session's real broker."""

from __future__ import annotations

import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import Topic
from arbiter.kit.kafka import ensure_topics, read_window
from arbiter.kit.settings import KitSettings

MINUTE_MS = 60_000


def _settings(infra_env: dict[str, str]) -> KitSettings:
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_fetch_max_wait_ms=50,
    )


async def _new_topic(bootstrap: str, partitions: int) -> Topic:
    topic = Topic(f"kit.window.{uuid.uuid4().hex[:8]}", ev.GameStarted, "game_id")
    await ensure_topics(bootstrap, partitions, [topic])
    return topic


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


async def test_the_records_stamped_from_the_start_of_the_window_to_the_end_are_passed_with_their_stamps(
        infra_env) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 3)
    now = int(time.time() * 1000)
    since = now - 30 * MINUTE_MS
    stamped = [
        # Partition 0: older records, the window, and records stamped ahead of our clock (a producer's
        # clock runs fast): they are in the log already, so they are passed too.
        *((0, f"old-{i}", since - (3 - i) * MINUTE_MS) for i in range(3)),
        *((0, f"in-{i}", since + i * MINUTE_MS) for i in range(4)),
        *((0, f"ahead-{i}", now + MINUTE_MS + i) for i in range(3)),
        # Partition 1: one batch of several records, all in the window (tansu's end offset stops
        # at the first record of a partition's last batch: the rest must be read all the same).
        *((1, f"tail-{i}", now - 1_000 + i) for i in range(5)),
        # Partition 2 stays empty.
    ]
    await _produce(settings.kafka_bootstrap_servers, topic, stamped)
    batches: list[list[tuple[int, ev.GameStarted]]] = []

    async def handle(batch: list[tuple[int, ev.GameStarted]]) -> None:
        batches.append(batch)

    passed = await read_window(settings, topic, since, handle, client_id="kit-window-test", max_records=3)
    got = [(event.game_id, stamp) for batch in batches for stamp, event in batch]
    expected = [(game_id, stamp) for _, game_id, stamp in stamped if stamp >= since]
    assert sorted(got) == sorted(expected)
    assert passed == len(got) == 12
    assert all(isinstance(event, ev.GameStarted) for batch in batches for _, event in batch)
    # Within a partition the order of the log is kept.
    assert [g for g, _ in got if not g.startswith("tail-")] == [g for _, g, s in stamped[:10] if s >= since]
    assert [g for g, _ in got if g.startswith("tail-")] == [f"tail-{i}" for i in range(5)]


async def test_an_empty_window_or_a_missing_topic_passes_nothing(infra_env) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 2)
    now = int(time.time() * 1000)
    await _produce(settings.kafka_bootstrap_servers, topic, [(0, "before", now - 10 * MINUTE_MS),
                                                            (1, "also-before", now - 20 * MINUTE_MS)])
    calls: list[int] = []

    async def handle(batch: list[tuple[int, ev.GameStarted]]) -> None:
        calls.append(len(batch))

    assert await read_window(settings, topic, now - 5 * MINUTE_MS, handle, client_id="kit-window-test") == 0
    missing = Topic(f"kit.window.none.{uuid.uuid4().hex[:8]}", ev.GameStarted, "game_id")
    assert await read_window(settings, missing, 0, handle, client_id="kit-window-test") == 0
    assert calls == []


async def test_a_record_that_does_not_decode_is_skipped(infra_env) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 1)
    now = int(time.time() * 1000)
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        for value in (ev.GameStarted(game_id="before").SerializeToString(), b"\xff\xff not protobuf",
                      ev.GameStarted(game_id="after").SerializeToString()):
            await producer.send_and_wait(topic.name, value, partition=0, timestamp_ms=now)
    finally:
        await producer.stop()
    got: list[str] = []

    async def handle(batch: list[tuple[int, ev.GameStarted]]) -> None:
        got.extend(event.game_id for _, event in batch)

    assert await read_window(settings, topic, now - MINUTE_MS, handle, client_id="kit-window-test") == 2
    assert got == ["before", "after"]


@pytest.mark.parametrize("failing_at", [1, 2])
async def test_a_failing_handler_stops_the_read_and_its_error_comes_out(infra_env, failing_at: int) -> None:
    settings = _settings(infra_env)
    topic = await _new_topic(settings.kafka_bootstrap_servers, 1)
    now = int(time.time() * 1000)
    await _produce(settings.kafka_bootstrap_servers, topic, [(0, f"g{i}", now - 60_000 + i) for i in range(6)])
    calls = 0

    async def handle(batch: list[tuple[int, ev.GameStarted]]) -> None:
        nonlocal calls
        calls += 1
        if calls == failing_at:
            raise RuntimeError("the cache is down")

    with pytest.raises(RuntimeError, match="the cache is down"):
        await read_window(settings, topic, now - 120_000, handle, client_id="kit-window-test", max_records=2)
    assert calls == failing_at
