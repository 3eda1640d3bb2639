"""Composition root of the rating service: the row of DESIGN.md's table, wired through the kit.

Consumes game.finished, keeps Glicko-2 per (player, variant, speed) in PostgreSQL, answers
RatingService over gRPC and publishes rating.updated through the outbox (R-1, R-3..R-5).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from arbiter.contracts import rating_pb2_grpc
from arbiter.kit import events
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import subscribe
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from services.rating.handlers import CONSUMER, GameFinishedHandler
from services.rating.metrics import RatingMetrics
from services.rating.servicer import RPC_ROLES, RatingServicer
from services.rating.settings import RatingSettings

log = logging.getLogger(__name__)
SERVICE = "rating"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: RatingSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    infra = await connect(settings, SERVICE, MIGRATIONS)
    handler = GameFinishedHandler(infra.pool, infra.outbox, RatingMetrics.create(infra.metrics), infra.time_source)
    subscribe(
        infra.broker, settings, infra.metrics, events.GAME_FINISHED, CONSUMER, handler,
        set_aside=infra.set_aside, batch=True, max_records=settings.rating_batch_size,
    )
    servicer = RatingServicer(infra.pool, infra.time_source)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.RatingService",
            lambda server: rating_pb2_grpc.add_RatingServiceServicer_to_server(servicer, server),
            roles=RPC_ROLES,
        )
    ]
    await ServiceRuntime(infra, grpc_services).run(stop)


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(RatingSettings)
    configure_logging(SERVICE, settings.log_level, settings.log_repeat_seconds)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
