"""Composition root of the arena service: the row of DESIGN.md's table, wired through the kit.

arena | owns arenas, Redis queues, rematch cooldowns, leaderboards | ArenaService |
consumes game finished (and first moves, for AR-5) | publishes arena lifecycle events,
game requests and boosts.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from arbiter.contracts import arena_pb2_grpc
from arbiter.kit import events
from arbiter.kit.creators import ensure_creator_registry
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import subscribe_many
from arbiter.kit.logs import configure_logging
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from arbiter.kit.timers import TimerPoller
from services.arena.hot import HotStore
from services.arena.lifecycle import END_TIMER, START_TIMER, Lifecycle
from services.arena.matchmaker import Matchmaker
from services.arena.metrics import ArenaMetrics
from services.arena.ratings import RatingCache
from services.arena.results import CONSUMER, ResultDesk
from services.arena.servicer import ArenaServicer
from services.arena.settings import ArenaSettings
from services.arena.watch import WatchHub

log = logging.getLogger(__name__)
SERVICE = "arena"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: ArenaSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    infra = await connect(settings, SERVICE, MIGRATIONS)
    await ensure_creator_registry(infra.pool)
    metrics = ArenaMetrics.create(infra.metrics)
    # Without a rating service the arena still pairs, by leaderboard rank only.
    rating_channel = infra.open_channel(settings.rating_grpc_addr) if settings.rating_grpc_addr else None
    ratings = RatingCache(rating_channel, settings.rating_timeout_seconds, settings.rating_retry_seconds)
    hot = HotStore(infra.redis)
    hub = WatchHub(infra.redis, max_queued=settings.watch_max_queued, max_watchers=settings.watch_max_watchers)
    lifecycle = Lifecycle(infra.outbox, hot, infra.time_source)
    matchmaker = Matchmaker(infra.pool, hot, infra.outbox, infra.time_source, ratings, hub, lifecycle, metrics,
                            settings)
    desk = ResultDesk(infra.pool, hot, infra.outbox, infra.time_source, matchmaker, hub)
    # One consumer for both topics: every game of the site flows through them, nearly all of them
    # other competitions' (dropped by their competition kind before any I/O), and each consumer
    # is a fetch loop that polls at the fetch wait even when nothing arrives.
    subscribe_many(infra.broker, settings, infra.metrics,
                   {events.GAME_FINISHED: desk.on_finished, events.MOVE_MADE: desk.on_moves}, CONSUMER,
                   max_records=settings.result_batch_size)
    timers = TimerPoller(infra.pool, {START_TIMER: lifecycle.on_timer, END_TIMER: lifecycle.on_timer},
                         infra.time_source, infra.metrics, poll_seconds=settings.timer_poll_seconds)
    servicer = ArenaServicer(infra.pool, infra.outbox, infra.time_source, hot, matchmaker, hub, settings)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.ArenaService",
            lambda server: arena_pb2_grpc.add_ArenaServiceServicer_to_server(servicer, server),
            # Issue 10: the calls a person could spam take from their rate-limit bucket.
            rate_limited=frozenset({"CreateArena", "JoinArena", "LeaveArena", "Boost"}),
        )
    ]
    try:
        await ServiceRuntime(infra, grpc_services, background=[timers.run, matchmaker.run]).run(stop)
    finally:
        if rating_channel is not None:
            await rating_channel.close()


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(ArenaSettings)
    configure_logging(SERVICE, settings.log_level)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
