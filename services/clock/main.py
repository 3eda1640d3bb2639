"""Composition root of the clock service: the row of DESIGN.md's table, wired through the kit.

clock | owns every running clock (Fischer and Triple Block), presence, flags | ClockService:
Get, Refuel, Claim, ResolveClaim | consumes game requested / started / moved / finished,
presence, boosts | publishes clock flagged, game abandoned (never sat), clock state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

from arbiter.contracts import clock_pb2_grpc
from arbiter.kit import events
from arbiter.kit.contact import BrokerContact
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import (
    CoPartitionAssignor,
    PartitionCatchUp,
    SettledKeys,
    kafka_security,
    subscribe,
    subscribe_many,
)
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from services.clock.flags import FlagPoller
from services.clock.handlers import ClockHandlers
from services.clock.hot import LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.rebuild import HotRebuild
from services.clock.servicer import RPC_ROLES, ClockServicer
from services.clock.settings import ClockSettings
from services.clock.store import CorrespondenceStore, LiveCopies, Reconciler

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
    copies = LiveCopies(infra.pool, settings.clock_redis_prefix)
    rebuild = HotRebuild(live, correspondence, infra.pool, metrics,
                         over_ttl_ms=int(settings.over_ttl_seconds * 1000),
                         rebuild_over_ms=int(settings.rebuild_over_seconds * 1000),
                         lease_ms=int(settings.rebuild_lease_seconds * 1000))
    # Before any consumer runs: Redis is rebuilt if it lost the clock's keys while the service was down.
    await rebuild.recover()
    publisher = StatePublisher(settings.kafka_bootstrap_servers, f"arbiter-{SERVICE}-state", infra.metrics,
                               kafka_security(settings))
    handlers = ClockHandlers(live, correspondence, copies, infra.outbox, publisher, infra.time_source, metrics)
    # Moves published while this process was down, or held by a consumer stalled on an outage of
    # Redis or PostgreSQL, are applied before any flag is decided.
    contact = BrokerContact(infra.broker.ping, interval=settings.broker_ping_seconds,
                            grace=settings.flag_outage_grace_seconds, missing_at_start=True)
    # Moves have a consumer of their own: a burst of moves never delays a game's start or end; the
    # lifecycle topics share one consumer (one group join, one fetch loop). Both lay partitions out
    # alike over the replicas (one token per process): the flag poller decides a game only where
    # both consumers hold its partition and have read it up (services/clock/flags.py).
    assignor = CoPartitionAssignor(uuid.uuid4().hex)
    lifecycle_read, moves_read = PartitionCatchUp(assignor), PartitionCatchUp(assignor)
    subscribe_many(infra.broker, settings, infra.metrics, {
        events.GAME_REQUESTED: handlers.on_requested,
        events.GAME_STARTED: handlers.on_started,
        events.PRESENCE_CHANGED: handlers.on_presence,
        events.BOOST_TAKEN: handlers.on_boost,
        events.GAME_FINISHED: handlers.on_finished,
    }, f"{SERVICE}.lifecycle", set_aside=infra.set_aside, max_records=settings.event_batch_size,
        fetch_min_bytes=settings.lifecycle_fetch_min_bytes, catch_up=lifecycle_read, news=contact)
    subscribe(infra.broker, settings, infra.metrics, events.MOVE_MADE, f"{SERVICE}.{events.MOVE_MADE.name}",
              handlers.on_moves, set_aside=infra.set_aside, batch=True, max_records=settings.move_batch_size,
              catch_up=moves_read, news=contact)
    poller = FlagPoller(live, correspondence, infra.pool, infra.outbox, infra.time_source, metrics, settings, contact,
                        SettledKeys([lifecycle_read, moves_read]))
    reconciler = Reconciler(correspondence, copies, settings.reconcile_seconds)
    servicer = ClockServicer(live, correspondence, copies, infra.outbox, infra.time_source)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.ClockService",
            lambda server: clock_pb2_grpc.add_ClockServiceServicer_to_server(servicer, server),
            roles=RPC_ROLES,
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
    configure_logging(SERVICE, settings.log_level, settings.log_repeat_seconds)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
