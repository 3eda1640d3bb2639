"""Composition root of the clock service: the row of DESIGN.md's table, wired through the kit.

clock | owns every running clock (Fischer and Triple Block), presence, flags | ClockService:
Get, Refuel, Claim, ResolveClaim | consumes game requested / started / moved / finished,
presence, boosts | publishes clock flagged, game abandoned (never sat), clock state.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from arbiter.contracts import clock_pb2_grpc
from arbiter.kit import events
from arbiter.kit.contact import BrokerContact
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import subscribe, subscribe_many
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from services.clock.flags import FlagPoller
from services.clock.handlers import ClockHandlers
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.records import CorrespondenceStore, Reconciler
from services.clock.servicer import ClockServicer
from services.clock.settings import ClockSettings
from services.clock.store import LiveStore

log = logging.getLogger(__name__)
SERVICE = "clock"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: ClockSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    infra = await connect(settings, SERVICE, MIGRATIONS)
    metrics = ClockMetrics.create(infra.metrics)
    live = LiveStore(infra.redis, settings.clock_redis_prefix, int(settings.over_ttl_seconds * 1000),
                     int(settings.parked_ttl_seconds * 1000))
    correspondence = CorrespondenceStore(infra.pool, live)
    publisher = StatePublisher(settings.kafka_bootstrap_servers, f"arbiter-{SERVICE}-state", infra.metrics)
    handlers = ClockHandlers(live, correspondence, infra.outbox, publisher, infra.time_source, metrics)
    # Moves have a consumer of their own: a burst of moves never delays a game's start or end; the
    # lifecycle topics share one consumer (one group join, one fetch loop).
    subscribe_many(infra.broker, settings, infra.metrics, {
        events.GAME_REQUESTED: handlers.on_requested,
        events.GAME_STARTED: handlers.on_started,
        events.PRESENCE_CHANGED: handlers.on_presence,
        events.BOOST_TAKEN: handlers.on_boost,
        events.GAME_FINISHED: handlers.on_finished,
    }, f"{SERVICE}.lifecycle", max_records=settings.event_batch_size,
        fetch_min_bytes=settings.lifecycle_fetch_min_bytes)
    subscribe(infra.broker, settings, infra.metrics, events.MOVE_MADE, f"{SERVICE}.{events.MOVE_MADE.name}",
              handlers.on_moves, batch=True, max_records=settings.move_batch_size)
    # Moves published while this process was down are read before any flag is decided.
    contact = BrokerContact(infra.broker.ping, interval=settings.broker_ping_seconds,
                            grace=settings.flag_outage_grace_seconds, missing_at_start=True)
    poller = FlagPoller(live, correspondence, infra.pool, infra.outbox, infra.time_source, metrics, settings, contact)
    reconciler = Reconciler(correspondence, settings.reconcile_seconds)
    servicer = ClockServicer(live, correspondence, infra.outbox, infra.time_source)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.ClockService",
            lambda server: clock_pb2_grpc.add_ClockServiceServicer_to_server(servicer, server),
        )
    ]
    # Started before the consumers: the first batch of moves publishes clock states.
    await publisher.start()
    try:
        await ServiceRuntime(infra, grpc_services, background=[contact.run, poller.run, reconciler.run]).run(stop)
    finally:
        await publisher.stop()


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(ClockSettings)
    configure_logging(SERVICE, settings.log_level)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
