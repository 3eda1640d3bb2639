"""The pairing service in-process on the session's real Kafka, Redis and PostgreSQL (see pairing_support)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import grpc
import pytest

# Test helpers are plain modules next to the tests (pytest runs with --import-mode=importlib);
# the play-site stand-in lives with the e2e tests and is shared.
_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE.parents[1] / "e2e" / "pairing"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from pairing_support import TIME_SCALE, OpeningsStandIn, PairingUnderTest, RatingsStandIn  # noqa: E402

from arbiter.contracts import openings_pb2_grpc, rating_pb2_grpc, tournament_pb2_grpc  # noqa: E402
from arbiter.devstack.processes import free_port  # noqa: E402
from arbiter.kit.timesource import TimeSource  # noqa: E402
from services.pairing.main import serve  # noqa: E402
from services.pairing.settings import PairingSettings  # noqa: E402


@pytest.fixture(scope="module")
async def pairing(infra_env: dict[str, str]) -> AsyncIterator[PairingUnderTest]:
    """The pairing service in this process, with its collaborators' stand-ins."""
    openings, ratings = OpeningsStandIn(), RatingsStandIn()
    collaborators = grpc.aio.server()
    openings_pb2_grpc.add_OpeningServiceServicer_to_server(openings, collaborators)
    rating_pb2_grpc.add_RatingServiceServicer_to_server(ratings, collaborators)
    port = collaborators.add_insecure_port("127.0.0.1:0")
    await collaborators.start()

    origin = datetime.now(UTC)
    settings = PairingSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=free_port(), metrics_port=free_port(),
        openings_grpc_addr=f"127.0.0.1:{port}", rating_grpc_addr=f"127.0.0.1:{port}",
        time_scale=TIME_SCALE, time_origin=origin, reconcile_seconds=0.5, kafka_heartbeat_interval_ms=500,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    address = f"127.0.0.1:{settings.grpc_port}"
    channel = grpc.aio.insecure_channel(address)
    ready = asyncio.ensure_future(channel.channel_ready())
    await asyncio.wait([ready, task], timeout=90, return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        ready.cancel()
        stop.set()
        await channel.close()
        await collaborators.stop(0)
        if task.done():
            task.result()  # the reason the service did not start
        await asyncio.wait_for(task, 30)
        raise TimeoutError("the pairing service did not serve within 90 s")
    db = await asyncpg.create_pool(infra_env["DATABASE_URL"], min_size=1, max_size=2,
                                   server_settings={"search_path": "pairing"})
    try:
        yield PairingUnderTest(address, settings, TimeSource(TIME_SCALE, origin), ratings, openings,
                               tournament_pb2_grpc.TournamentServiceStub(channel), db)
    finally:
        await db.close()
        await channel.close()
        stop.set()
        await asyncio.wait_for(task, 60)
        await collaborators.stop(0)

