"""The pairing service in-process on the session's real Kafka, Redis and PostgreSQL (see pairing_support)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import asyncpg
import grpc
import pytest

from arbiter.contracts import clock_pb2_grpc, openings_pb2_grpc, rating_pb2_grpc, tournament_pb2_grpc
from arbiter.kit.timesource import TimeSource
from services.pairing.main import serve
from services.pairing.settings import PairingSettings
from tests.integration.pairing.pairing_support import (
    TIME_SCALE,
    ClockStandIn,
    OpeningsStandIn,
    PairingUnderTest,
    RatingsStandIn,
)


class ReadyLine(logging.Handler):
    """Catches the kit's "service ready" log line and the gRPC and metrics ports it names."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.ready: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "service ready" and not self.ready.done():
            grpc_port = int(str(record.grpc).rsplit(":", 1)[1])
            metrics_port = int(str(record.metrics).rsplit(":", 1)[1].split("/", 1)[0])
            self.ready.set_result((grpc_port, metrics_port))


@pytest.fixture(scope="module")
async def pairing(infra_env: dict[str, str]) -> AsyncIterator[PairingUnderTest]:
    """The pairing service in this process, with its collaborators' stand-ins."""
    openings, ratings, clocks = OpeningsStandIn(), RatingsStandIn(), ClockStandIn()
    # The clock stand-in is synchronous (the e2e system serves it from a thread): run in this pool.
    collaborators = grpc.aio.server(migration_thread_pool=ThreadPoolExecutor(2))
    openings_pb2_grpc.add_OpeningServiceServicer_to_server(openings, collaborators)
    rating_pb2_grpc.add_RatingServiceServicer_to_server(ratings, collaborators)
    clock_pb2_grpc.add_ClockServiceServicer_to_server(clocks, collaborators)
    port = collaborators.add_insecure_port("127.0.0.1:0")
    await collaborators.start()

    origin = datetime.now(UTC)
    settings = PairingSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0,
        openings_grpc_addr=f"127.0.0.1:{port}", rating_grpc_addr=f"127.0.0.1:{port}",
        clock_grpc_addr=f"127.0.0.1:{port}",
        time_scale=TIME_SCALE, time_origin=origin, reconcile_seconds=0.5,
        # tansu answers a JoinGroup after half the session timeout, and the four consumers join one
        # after the other: a short session makes the start take seconds rather than ~15 s.
        kafka_session_timeout_ms=2000, kafka_heartbeat_interval_ms=400,
        # The machine's PostgreSQL (max_connections=100) is shared by every test running.
        db_pool_min=1, db_pool_max=4,
        # A group of its own: every service of the session shares the broker, and tansu can leave a
        # group whose members all left wedged for the next one to join (the e2e system after us).
        pairing_consumer_group=f"pairing-it-{uuid.uuid4().hex[:8]}",
    )
    stop = asyncio.Event()
    # Ports 0: the service binds whatever is free and names it in its "service ready" line. A port
    # picked free beforehand was now and then taken by another process before the service bound it.
    announced = ReadyLine()
    runtime_log = logging.getLogger("arbiter.kit.runtime")
    level = runtime_log.level
    runtime_log.setLevel(logging.INFO)
    runtime_log.addHandler(announced)
    task = asyncio.create_task(serve(settings, stop))
    try:
        await asyncio.wait([announced.ready, task], timeout=90, return_when=asyncio.FIRST_COMPLETED)
    finally:
        runtime_log.removeHandler(announced)
        runtime_log.setLevel(level)
    if not announced.ready.done():
        stop.set()
        await collaborators.stop(0)
        if task.done():
            task.result()  # the reason the service did not start
        await asyncio.wait_for(task, 30)
        raise TimeoutError("the pairing service did not serve within 90 s")
    grpc_port, metrics_port = announced.ready.result()
    settings = settings.model_copy(update={"grpc_port": grpc_port, "metrics_port": metrics_port})
    address = f"127.0.0.1:{grpc_port}"
    channel = grpc.aio.insecure_channel(address)
    db = await asyncpg.create_pool(infra_env["DATABASE_URL"], min_size=1, max_size=2,
                                   server_settings={"search_path": "pairing"})
    try:
        yield PairingUnderTest(address, settings, TimeSource(TIME_SCALE, origin), ratings, openings, clocks,
                               tournament_pb2_grpc.TournamentServiceStub(channel), db)
    finally:
        await db.close()
        await channel.close()
        stop.set()
        await asyncio.wait_for(task, 60)
        await collaborators.stop(0)

