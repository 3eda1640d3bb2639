"""Poison records never block a consumer (kit): bad records and events a handler keeps failing on are set aside.

On the real broker and PostgreSQL: each test consumes in a group of its own and names its events
with a tag (the topics are shared with the rest of the session, whose records a fresh group reads
too), and the set-aside rows are read back from the test's schema.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import asyncpg
from aiokafka import AIOKafkaProducer
from aiokafka.structs import ConsumerRecord
from faststream.kafka import KafkaBroker

from arbiter.contracts import common_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import make_broker, subscribe, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import REASONS, Rejected, StoredSetAside, decode_headers
from arbiter.kit.settings import KitSettings
from tests.support.polling import eventually


def _settings(infra_env, **overrides) -> KitSettings:
    values = {"consumer_max_attempts": 3, "consumer_retry_backoff_seconds": 0.01, **overrides}
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_heartbeat_interval_ms=500,
        **values,
    )


def abandoned(game_id: str) -> ev.GameAbandoned:
    event = ev.GameAbandoned(game_id=game_id, white_id="w", black_id="b")
    event.meta.event_id = uuid.uuid4().hex
    return event


@contextlib.asynccontextmanager
async def clients(settings: KitSettings, broker: KafkaBroker) -> AsyncIterator[AIOKafkaProducer]:
    """A started producer for the test's records; it and the consumers' broker (the test starts it) stopped after."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        yield producer
    finally:
        await producer.stop()
        await broker.stop()


async def _rows(pool: asyncpg.Pool, group: str) -> list[asyncpg.Record]:
    return await pool.fetch("SELECT * FROM consumer_set_aside WHERE consumer_group = $1 ORDER BY topic, \"offset\"",
                            group)


async def test_a_batch_handler_failing_on_one_event_sets_only_that_event_aside(infra_env, kit_pool) -> None:
    """The batch is tried CONSUMER_MAX_ATTEMPTS times, then in halves: every other event is handled once found."""
    settings, tag, metrics = _settings(infra_env), uuid.uuid4().hex[:8], Metrics("kit_poison_batch")
    group = f"kit-poison-halves-{tag}"
    handled: list[str] = []
    calls = [0]

    async def on_abandoned(batch: list[ev.GameAbandoned]) -> str:
        ours = [e.game_id for e in batch if e.game_id.startswith(tag)]
        if ours:
            calls[0] += 1
        if f"{tag}-bad" in ours:
            raise ValueError("this event breaks the handler every time")
        handled.extend(ours)
        return "handled"

    broker = make_broker(settings, "kit_poison_batch")
    subscribe(broker, settings, metrics, events.GAME_ABANDONED, group, on_abandoned,
              set_aside=StoredSetAside(kit_pool, metrics), batch=True)
    async with clients(settings, broker) as producer:
        names = [f"{tag}-{i:02d}" for i in range(10)] + [f"{tag}-bad"] + [f"{tag}-{i:02d}" for i in range(10, 20)]
        # One key: one partition, in this order, most likely in one fetch.
        batch = producer.create_batch()
        for name in names:
            batch.append(key=tag.encode(), value=abandoned(name).SerializeToString(), timestamp=None)
        partitions = sorted(await producer.partitions_for("game.abandoned"))
        await (await producer.send_batch(batch, "game.abandoned", partition=partitions[0]))
        await broker.start()
        await eventually(lambda: {f"{tag}-{i:02d}" for i in range(20)} <= set(handled), timeout=60)
        await eventually(lambda: metrics.registry.get_sample_value("arbiter_events_set_aside_total", {
            "service": "kit_poison_batch", "topic": "game.abandoned", "reason": "handler_failed"}) == 1.0, timeout=60)
        rows = [row for row in await _rows(kit_pool, group) if row["key"] == tag.encode()]
        assert [(ev.GameAbandoned.FromString(r["value"]).game_id, r["reason"]) for r in rows] == [
            (f"{tag}-bad", "handler_failed")]
        assert rows[0]["attempts"] >= settings.consumer_max_attempts
        assert "ValueError: this event breaks the handler every time" in rows[0]["detail"]
        assert rows[0]["key"] == tag.encode()
        # The partition moved on: an event published after it is handled, and the bad one is not tried again.
        tried = calls[0]
        await producer.send_and_wait("game.abandoned", abandoned(f"{tag}-after").SerializeToString(),
                                     key=tag.encode(), partition=partitions[0])
        await eventually(lambda: f"{tag}-after" in handled, timeout=60)
        assert calls[0] == tried + 1


async def test_an_outage_is_waited_out_and_never_sets_anything_aside(infra_env, kit_pool) -> None:
    """A handler failing for want of PostgreSQL, Redis or the broker is not a poison event: however often, it waits."""
    settings, tag, metrics = _settings(infra_env, consumer_max_attempts=1), uuid.uuid4().hex[:8], Metrics("kit_outage")
    group = f"kit-poison-outage-{tag}"
    outage_left = [4]
    handled: list[str] = []

    async def on_abandoned(batch: list[ev.GameAbandoned]) -> str:
        ours = [e.game_id for e in batch if e.game_id.startswith(tag)]
        if ours and outage_left[0]:
            outage_left[0] -= 1
            raise ConnectionRefusedError("the database is down")
        handled.extend(ours)
        return "handled"

    broker = make_broker(settings, "kit_outage")
    subscribe_many(broker, settings, metrics, {events.GAME_ABANDONED: on_abandoned}, group,
                   set_aside=StoredSetAside(kit_pool, metrics))
    async with clients(settings, broker) as producer:
        await producer.send_and_wait("game.abandoned", abandoned(f"{tag}-1").SerializeToString(), key=tag.encode())
        await broker.start()
        await eventually(lambda: handled == [f"{tag}-1"], timeout=60)
        assert outage_left == [0]
        ours = [r for r in await _rows(kit_pool, group) if r["key"] == tag.encode()]
        assert ours == []


async def test_a_single_event_handler_gets_its_attempts_then_the_event_is_set_aside(infra_env, kit_pool) -> None:
    settings, tag, metrics = _settings(infra_env), uuid.uuid4().hex[:8], Metrics("kit_single")
    group = f"kit-poison-single-{tag}"
    attempts: dict[str, int] = {}

    async def on_cancelled(event: ev.TournamentCancelled) -> str:
        if not event.tournament_id.startswith(tag):
            return "ignored"
        attempts[event.tournament_id] = attempts.get(event.tournament_id, 0) + 1
        if event.tournament_id.endswith("-bad"):
            raise KeyError("no such tournament row, ever")
        return "handled"

    broker = make_broker(settings, "kit_single")
    subscribe(broker, settings, metrics, events.TOURNAMENT_CANCELLED, group, on_cancelled,
              set_aside=StoredSetAside(kit_pool, metrics))
    async with clients(settings, broker) as producer:
        for name in (f"{tag}-bad", f"{tag}-good"):
            await producer.send_and_wait("tournament.cancelled",
                                         ev.TournamentCancelled(tournament_id=name).SerializeToString(),
                                         key=tag.encode())
        await broker.start()
        await eventually(lambda: f"{tag}-good" in attempts, timeout=60)
        assert attempts == {f"{tag}-bad": settings.consumer_max_attempts, f"{tag}-good": 1}
        [row] = [r for r in await _rows(kit_pool, group) if r["key"] == tag.encode()]
        assert (row["reason"], row["attempts"]) == ("handler_failed", settings.consumer_max_attempts)
        assert ev.TournamentCancelled.FromString(row["value"]).tournament_id == f"{tag}-bad"


async def test_records_that_break_the_field_rules_never_reach_the_handler(infra_env, kit_pool) -> None:
    """NUL, a 60,000-character id, an unknown enum, a date no calendar holds: set aside at once, with the field named.

    A header FastStream cannot read as text is no reason to refuse a good event: it is handled,
    and a bad one keeps its headers in the set-aside table.
    """
    settings, tag, metrics = _settings(infra_env), uuid.uuid4().hex[:8], Metrics("kit_fields")
    group = f"kit-poison-fields-{tag}"
    seen: list[str] = []

    async def on_finished(batch: list[ev.GameFinished]) -> str:
        seen.extend(e.game_id for e in batch if e.game_id.startswith(tag))
        return "handled"

    def finished(game_id: str, **fields) -> bytes:
        values = {"white_id": "w", "black_id": "b", "result": common_pb2.GAME_RESULT_DRAW, **fields}
        event = ev.GameFinished(game_id=game_id, **values)
        event.meta.event_id = uuid.uuid4().hex
        return event.SerializeToString()

    huge = ev.GameFinished(game_id=f"{tag}-huge" + "x" * 60_000)
    late = ev.GameFinished(game_id=f"{tag}-time")
    late.finished_at.seconds = 2**62
    records = [
        (finished(f"{tag}-nul", white_id="a\x00b"), [("event-id", b"e1")]),
        (huge.SerializeToString(), []),
        (finished(f"{tag}-enum", result=999), []),
        (late.SerializeToString(), []),
        (finished(f"{tag}-blank", black_id=" "), []),
        (finished(f"{tag}-good"), [("event-type", b"\xff\xfe not text")]),
    ]
    broker = make_broker(settings, "kit_fields")
    subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: on_finished}, group,
                   set_aside=StoredSetAside(kit_pool, metrics))
    async with clients(settings, broker) as producer:
        for value, headers in records:
            await producer.send_and_wait("game.finished", value, key=tag.encode(), headers=headers)
        await broker.start()
        await eventually(lambda: seen == [f"{tag}-good"], timeout=60)
        await eventually(lambda: metrics.registry.get_sample_value("arbiter_events_set_aside_total", {
            "service": "kit_fields", "topic": "game.finished", "reason": "invalid"}) >= 5, timeout=60)
        rows = [r for r in await _rows(kit_pool, group) if r["key"] == tag.encode()]
        assert [(r["reason"], r["attempts"]) for r in rows] == [("invalid", 0)] * 5
        details = [r["detail"] for r in rows]
        assert details[0] == 'white_id "a\\x00b" holds control or invisible characters; a player id cannot'
        assert details[1] == "game_id has 60,013 characters; game ids have at most 256"
        assert details[2] == "result is 999, which GameResult does not define (in this version)"
        assert details[3].startswith("finished_at (4611686018427387904 s, 0 ns) is not a date")
        assert details[4] == "black_id is blank; a player id needs visible characters"
        assert [bytes(r["value"]) for r in rows] == [value for value, _ in records[:5]]
        assert decode_headers(rows[0]["headers"]) == [("event-id", b"e1")]


async def test_setting_aside_is_idempotent_and_the_metric_starts_at_zero(kit_pool) -> None:
    """A record delivered again after a crash is kept once and counted once; every series exists before the first."""
    metrics = Metrics("kit_once")
    set_aside = StoredSetAside(kit_pool, metrics)
    set_aside.expect(["game.finished"])
    assert [metrics.registry.get_sample_value("arbiter_events_set_aside_total", {
        "service": "kit_once", "topic": "game.finished", "reason": reason}) for reason in REASONS] == [0.0, 0.0, 0.0]
    record = ConsumerRecord(topic="game.finished", partition=0, offset=41, timestamp=1_700_000_000_000,
                            timestamp_type=0, key=b"k\x00", value=b"\x00\x01", checksum=None, serialized_key_size=2,
                            serialized_value_size=2, headers=[("h\x00", None)])
    rejected = Rejected(record, "undecodable", "not a GameFinished: \x00 junk", 0)
    assert await set_aside.put("kit-once", [rejected]) == 1
    assert await set_aside.put("kit-once", [rejected]) == 0
    [row] = await _rows(kit_pool, "kit-once")
    assert (row["key"], row["value"], row["detail"]) == (b"k\x00", b"\x00\x01", "not a GameFinished: \\x00 junk")
    assert decode_headers(row["headers"]) == [("h\x00", None)]
    assert metrics.registry.get_sample_value("arbiter_events_set_aside_total", {
        "service": "kit_once", "topic": "game.finished", "reason": "undecodable"}) == 1.0
