"""The kit's delivery guarantees on the real broker and PostgreSQL: outbox, relay, idempotent consumers."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import pytest

from arbiter.contracts import common_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.idempotency import first_delivery
from arbiter.kit.kafka import make_broker, make_outbox_producer, outbox_publisher, subscribe
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox, OutboxRelay
from arbiter.kit.poison import StoredSetAside
from arbiter.kit.settings import KitSettings
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.processes import ManagedProcess
from tests.support.polling import eventually

HERE = Path(__file__).resolve().parent


def kit_settings(infra_env: dict[str, str]) -> KitSettings:
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0,
        kafka_session_timeout_ms=6000, kafka_heartbeat_interval_ms=500,
    )


async def producer_pool(settings: KitSettings, schema: str) -> asyncpg.Pool:
    pool = await create_pool(settings.database_url, schema)
    await migrate(pool, schema, [])
    await pool.execute("CREATE TABLE IF NOT EXISTS games (game_id text PRIMARY KEY, result text NOT NULL)")
    return pool


def finished(game_id: str) -> ev.GameFinished:
    return ev.GameFinished(game_id=game_id, white_id="w", black_id="b", result=common_pb2.GAME_RESULT_WHITE_WINS)


async def test_outbox_event_is_published_once_saved_and_a_duplicate_changes_nothing(infra_env) -> None:
    settings = kit_settings(infra_env)
    producer = await producer_pool(settings, "kit_producer")
    consumer_pool = await create_pool(settings.database_url, "kit_consumer")
    await migrate(consumer_pool, "kit_consumer", [])
    await consumer_pool.execute("CREATE TABLE IF NOT EXISTS effects (game_id text NOT NULL)")
    game_id = f"g-{uuid.uuid4().hex}"

    # The state change and its event commit together; a rolled-back change leaves no event.
    outbox = Outbox("kit_producer", TimeSource())
    async with producer.acquire() as connection, connection.transaction():
        await connection.execute("INSERT INTO games VALUES ($1, 'white')", game_id)
        await outbox.add(connection, finished(game_id))
    with pytest.raises(RuntimeError):
        async with producer.acquire() as connection, connection.transaction():
            await connection.execute("INSERT INTO games VALUES ($1, 'white')", game_id + "-rolled-back")
            await outbox.add(connection, finished(game_id + "-rolled-back"))
            raise RuntimeError("the change fails after the event was added")
    pending = await producer.fetch("SELECT key FROM outbox WHERE key LIKE $1", game_id + "%")
    assert [row["key"] for row in pending] == [game_id]

    metrics = Metrics("kit_consumer")
    consumer_broker = make_broker(settings, "kit_consumer")

    async def on_finished(event: ev.GameFinished) -> str:
        # game.finished is shared with every other test of the session; some publish bare events.
        if event.game_id != game_id:
            return "ignored"
        async with consumer_pool.acquire() as connection, connection.transaction():
            if not await first_delivery(connection, "kit_consumer", event.meta.event_id):
                return "duplicate"
            await connection.execute("INSERT INTO effects VALUES ($1)", event.game_id)
        return "handled"

    subscribe(consumer_broker, settings, metrics, events.GAME_FINISHED, f"kit-{uuid.uuid4().hex[:8]}", on_finished,
              set_aside=StoredSetAside(consumer_pool, metrics))
    producer_broker = make_broker(settings, "kit_producer")
    await consumer_broker.start()
    await producer_broker.start()
    try:
        outbox_producer = make_outbox_producer(settings, "kit_producer")
        await outbox_producer.start()
        relay = OutboxRelay(producer, "kit_producer", outbox_publisher(outbox_producer), Metrics("kit_producer"))
        assert await relay.relay_once() >= 1
        await outbox_producer.stop()
        assert await producer.fetchval("SELECT count(*) FROM outbox WHERE key = $1", game_id) == 0

        async def applied() -> bool:
            return await consumer_pool.fetchval("SELECT count(*) FROM effects WHERE game_id = $1", game_id) == 1

        await eventually(applied)
        # The same event delivered again (at-least-once): the effect stays single.
        event = finished(game_id)
        event.meta.event_id = await consumer_pool.fetchval(
            "SELECT event_id FROM processed_events ORDER BY processed_at DESC LIMIT 1"
        )
        await producer_broker.publish(event.SerializeToString(), topic="game.finished", key=game_id.encode())

        async def duplicate_seen() -> bool:
            sample = metrics.registry.get_sample_value(
                "arbiter_events_consumed_total",
                {"service": "kit_consumer", "topic": "game.finished", "outcome": "duplicate"},
            )
            return bool(sample)

        await eventually(duplicate_seen)
        assert await consumer_pool.fetchval("SELECT count(*) FROM effects WHERE game_id = $1", game_id) == 1
    finally:
        await producer_broker.stop()
        await consumer_broker.stop()
        await producer.close()
        await consumer_pool.close()


async def test_sigkill_after_effect_before_offset_commit_redelivers_and_effect_happens_once(
    infra_env, tmp_path
) -> None:
    settings = kit_settings(infra_env)
    schema = f"kit_sigkill_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, **infra_env, "SCHEMA": schema, "GROUP_ID": f"sigkill-{schema}",
           "CRASH_MARKER": str(tmp_path / "crashed"), "KAFKA_SESSION_TIMEOUT_MS": "6000",
           "KAFKA_HEARTBEAT_INTERVAL_MS": "500"}
    game_id = f"g-{uuid.uuid4().hex}"
    env["GAME_ID"] = game_id
    command = [sys.executable, str(HERE / "consumer_process.py")]
    first = ManagedProcess("consumer-1", command, tmp_path / "consumer-1.log", env=env).start()
    producer = await producer_pool(settings, "kit_producer")
    broker = make_broker(settings, "kit_producer")
    await broker.start()
    try:
        async with producer.acquire() as connection, connection.transaction():
            await connection.execute("INSERT INTO games VALUES ($1, 'white')", game_id)
            await Outbox("kit_producer", TimeSource()).add(connection, finished(game_id))
        outbox_producer = make_outbox_producer(settings, "kit_producer")
        await outbox_producer.start()
        relay = OutboxRelay(producer, "kit_producer", outbox_publisher(outbox_producer), Metrics("kit_producer"))
        await relay.relay_once()
        await outbox_producer.stop()

        deadline = time.monotonic() + 60
        while not first.exited() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert first.returncode() == -signal.SIGKILL, (tmp_path / "consumer-1.log").read_text()

        async def count(table: str) -> int:
            return await producer.fetchval(f'SELECT count(*) FROM "{schema}".{table} WHERE game_id = $1', game_id)

        assert await count("effects") == 1
        assert await count("deliveries") == 1

        second = ManagedProcess("consumer-2", command, tmp_path / "consumer-2.log", env=env).start()
        try:
            async def redelivered() -> bool:
                return await count("deliveries") >= 2

            await eventually(redelivered, timeout=60)
            assert await count("effects") == 1
        finally:
            assert second.stop(signal.SIGINT) == 0, (tmp_path / "consumer-2.log").read_text()
    finally:
        first.stop()  # already gone when the test went to plan; a failed wait must not leave it running
        await broker.stop()
        await producer.close()
