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
from arbiter.kit.ratings import RatingsClient
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from arbiter.kit.timers import TimerPoller
from services.arena.clients import RatingCache
from services.arena.handlers import CONSUMER, ResultDesk
from services.arena.hot import HotStore
from services.arena.lifecycle import END_TIMER, START_TIMER, Lifecycle
from services.arena.matchmaker import Matchmaker
from services.arena.metrics import ArenaMetrics
from services.arena.servicer import RPC_ROLES, ArenaServicer
from services.arena.settings import ArenaSettings
from services.arena.watch import WatchHub

log = logging.getLogger(__name__)
SERVICE = "arena"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: ArenaSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    # A watch server (WATCH_ONLY) serves the Watch streams alone: no topics, consumers or background work.
    infra = await connect(settings, SERVICE, MIGRATIONS, topics=not settings.watch_only)
    await ensure_creator_registry(infra.pool)
    metrics = ArenaMetrics.create(infra.metrics)
    # Without a rating service the arena still pairs, by leaderboard rank only.
    rating_channel = infra.open_channel(settings.rating_grpc_addr) if settings.rating_grpc_addr else None
    rating_client = (
        RatingsClient(rating_channel, settings.rating_timeout_seconds) if rating_channel is not None else None
    )
    ratings = RatingCache(rating_client, settings.rating_retry_seconds)
    # A Redis pool per kind of user: the calls, the matchmaker, and the rest of the background work
    # (results, timers, the state sent with Watch changes).
    hot = HotStore(infra.redis)
    background_hot = HotStore(infra.background_redis)
    matchmaker_hot = HotStore(infra.redis_pools.pool("matchmaker", settings.redis_matchmaker_connections))
    # The calls publish their changes and serve Watch streams through `hub`; the background work
    # publishes through `changes`.
    hub = WatchHub(infra.redis, infra.watch_feed(settings.watch_max_streams), max_queued=settings.watch_max_queued,
                   max_watchers=settings.watch_max_watchers)
    changes = WatchHub(infra.background_redis)
    lifecycle = Lifecycle(infra.outbox, background_hot, infra.time_source)
    matchmaker = Matchmaker(infra.pool, matchmaker_hot, infra.outbox, infra.time_source, ratings, changes, lifecycle,
                            metrics, settings, foreground=infra.foreground)
    desk = ResultDesk(infra.pool, background_hot, infra.outbox, infra.time_source, matchmaker, changes)
    # One consumer for both topics: every game of the site flows through them, nearly all of them
    # other competitions' (dropped by their competition kind before any I/O), and each consumer
    # is a fetch loop that polls at the fetch wait even when nothing arrives.
    subscribe_many(infra.broker, settings, infra.metrics,
                   {events.GAME_FINISHED: desk.on_finished, events.MOVE_MADE: desk.on_moves}, CONSUMER,
                   set_aside=infra.set_aside, max_records=settings.result_batch_size)
    timers = TimerPoller(infra.pool, {START_TIMER: lifecycle.on_timer, END_TIMER: lifecycle.on_timer},
                         infra.time_source, infra.metrics, poll_seconds=settings.timer_poll_seconds)
    servicer = ArenaServicer(infra.pool, infra.outbox, infra.time_source, hot, matchmaker, hub, settings,
                             watch_hot=background_hot)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.ArenaService",
            lambda server: arena_pb2_grpc.add_ArenaServiceServicer_to_server(servicer, server),
            roles=RPC_ROLES,
            # The calls a person could spam take from their rate-limit bucket.
            rate_limited=frozenset({"CreateArena", "JoinArena", "LeaveArena", "Boost"}),
        )
    ]
    try:
        await ServiceRuntime(infra, grpc_services, background=[timers.run, matchmaker.run],
                             watch_only=settings.watch_only).run(stop)
    finally:
        if rating_channel is not None:
            await rating_channel.close()


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(ArenaSettings)
    configure_logging(SERVICE, settings.log_level, settings.log_repeat_seconds)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
