"""The arena service in-process on the session's real Kafka, Redis and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import grpc
import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer

from arbiter.contracts import arena_pb2_grpc
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.processes import free_port
from services.arena.main import serve
from services.arena.settings import ArenaSettings
from tests.integration.arena.arena_support import TIME_SCALE, ArenaUnderTest


@pytest.fixture(scope="module")
async def arena(infra_env: dict[str, str]) -> AsyncIterator[ArenaUnderTest]:
    """The arena service in this process (no rating service: it pairs by rank only)."""
    origin = datetime.now(UTC)
    settings = ArenaSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=free_port(), metrics_port=free_port(),
        time_scale=TIME_SCALE, time_origin=origin, kafka_heartbeat_interval_ms=300, kafka_session_timeout_ms=2000,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{settings.grpc_port}")
    await asyncio.wait_for(channel.channel_ready(), 60)
    db = await asyncpg.create_pool(infra_env["DATABASE_URL"], server_settings={"search_path": "arena"})
    producer = AIOKafkaProducer(bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    await producer.start()
    redis = aioredis.from_url(infra_env["REDIS_URL"])
    try:
        yield ArenaUnderTest(arena_pb2_grpc.ArenaServiceStub(channel), db, producer, redis,
                             TimeSource(TIME_SCALE, origin), settings)
    finally:
        await redis.aclose()
        await producer.stop()
        await db.close()
        await channel.close()
        stop.set()
        await asyncio.wait_for(task, 60)
