"""Composition root of the clock service: the row of DESIGN.md's table, wired through the kit."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from arbiter.contracts import clock_pb2_grpc
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from services.clock.settings import ClockSettings

log = logging.getLogger(__name__)
SERVICE = "clock"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: ClockSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    infra = await connect(settings, SERVICE, MIGRATIONS)
    servicer = clock_pb2_grpc.ClockServiceServicer()
    grpc_services = [
        GrpcService(
            "arbiter.contracts.ClockService",
            lambda server: clock_pb2_grpc.add_ClockServiceServicer_to_server(servicer, server),
        )
    ]
    await ServiceRuntime(infra, grpc_services).run(stop)


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(ClockSettings)
    configure_logging(SERVICE, settings.log_level)
    run_service(lambda: serve(settings))


if __name__ == "__main__":
    main()
