"""Composition root of the openings service: the row of DESIGN.md's table, wired through the kit.

owns: the official tables (pure data in libs) and the per-round draws (PostgreSQL)
gRPC: OpeningService DrawOpening, ListOpenings, GetOpening, CheckRated
consumes: tournament.cancelled (its draws are forgotten)
publishes: nothing yet (OpeningDrawn is proposed; the outbox relay runs as in every service)
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from arbiter.contracts import openings_pb2_grpc
from arbiter.kit import events
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import subscribe
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from services.openings.drawing import OpeningDraws
from services.openings.handlers import CONSUMER, TournamentCancelledHandler
from services.openings.metrics import OpeningsMetrics
from services.openings.servicer import RPC_ROLES, OpeningServicer
from services.openings.settings import OpeningsSettings

log = logging.getLogger(__name__)
SERVICE = "openings"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: OpeningsSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    infra = await connect(settings, SERVICE, MIGRATIONS)
    draws = OpeningDraws(infra.pool, infra.time_source, OpeningsMetrics.create(infra.metrics), infra.outbox)
    subscribe(
        infra.broker, settings, infra.metrics, events.TOURNAMENT_CANCELLED, CONSUMER,
        TournamentCancelledHandler(infra.pool, infra.time_source), set_aside=infra.set_aside,
    )
    servicer = OpeningServicer(draws)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.OpeningService",
            lambda server: openings_pb2_grpc.add_OpeningServiceServicer_to_server(servicer, server),
            roles=RPC_ROLES,
        )
    ]
    await ServiceRuntime(infra, grpc_services).run(stop)


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(OpeningsSettings)
    configure_logging(SERVICE, settings.log_level, settings.log_repeat_seconds)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
