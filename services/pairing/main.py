"""Composition root of the pairing service: the row of DESIGN.md's table, wired through the kit.

pairing | owns tournaments, entrants, rounds, pairings, standings | TournamentService |
consumes game started / finished / flagged / abandoned | publishes tournament lifecycle events
and game requests.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit import events
from arbiter.kit.creators import ensure_creator_registry
from arbiter.kit.grpcserver import GrpcService
from arbiter.kit.kafka import SoleConsumer, subscribe_many
from arbiter.kit.logs import configure_logging
from arbiter.kit.ratelimit import RateLimiter
from arbiter.kit.ratings import RatingsClient
from arbiter.kit.runtime import ServiceRuntime, connect, run_service
from arbiter.kit.settings import load_settings
from arbiter.kit.timers import TimerPoller
from services.pairing.busy import BusyRebuild, BusyRegistry
from services.pairing.clients import ClockClient, OpeningsClient
from services.pairing.closing import Closing
from services.pairing.handlers import ResultDesk
from services.pairing.metrics import PairingMetrics
from services.pairing.rounds import Rounds, start_engine_workers
from services.pairing.scheduler import Scheduler
from services.pairing.servicer import RPC_ROLES, TournamentServicer
from services.pairing.settings import PairingSettings
from services.pairing.timers import CLOSE_TIMER, START_TIMER
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)
SERVICE = "pairing"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


async def serve(settings: PairingSettings, stop: asyncio.Event | None = None) -> None:
    """Connect, wire the handlers and serve until stopped."""
    # A watch server (WATCH_ONLY) serves the Watch streams alone: no topics, consumers, engine or background work.
    infra = await connect(settings, SERVICE, MIGRATIONS, topics=not settings.watch_only)
    await ensure_creator_registry(infra.pool)
    metrics = PairingMetrics.create(infra.metrics)
    # Calls to other services carry this service's token when authentication is on (arbiter.kit.auth).
    openings_channel = infra.open_channel(settings.openings_grpc_addr)
    rating_channel = infra.open_channel(settings.rating_grpc_addr)
    clock_channel = infra.open_channel(settings.clock_grpc_addr)
    # The Swiss engine is CPU bound: worker processes keep the event loop answering meanwhile.
    executor = (
        ProcessPoolExecutor(settings.pairing_processes, mp_context=multiprocessing.get_context("spawn"))
        if settings.pairing_processes and not settings.watch_only else None
    )
    if executor is not None:
        start_engine_workers(executor, settings.pairing_processes)
    busy = BusyRegistry(infra.redis_pools.pool("busy", settings.redis_busy_connections), settings.busy_ttl_seconds)
    busy_rebuild = BusyRebuild(busy, infra.pool, settings, metrics.busy_rebuilds, SERVICE,
                               check_seconds=settings.busy_check_seconds,
                               lease_seconds=settings.busy_rebuild_lease_seconds, hot_rebuilds=metrics.hot_rebuilds)
    # The calls publish their changes and serve Watch streams through `hub`; the rounds and results
    # publish through `changes`, on the background pool.
    hub = WatchHub(infra.redis, infra.watch_feed(settings.watch_max_streams), max_queued=settings.watch_max_queued,
                   max_watchers=settings.watch_max_watchers)
    changes = WatchHub(infra.background_redis)
    ratings = RatingsClient(rating_channel, settings.call_timeout_seconds)
    closing = Closing(infra.pool, infra.outbox, infra.time_source,
                      ClockClient(clock_channel, settings.call_timeout_seconds), busy, changes)
    rounds = Rounds(infra.pool, infra.outbox, infra.time_source,
                    OpeningsClient(openings_channel, settings.call_timeout_seconds), busy, changes, metrics, closing,
                    executor)
    scheduler = Scheduler(infra.pool, infra.outbox, infra.time_source, ratings, rounds, closing, changes, metrics,
                          settings, foreground=infra.foreground)
    # The subscriber is made below, from the desk's handlers; the desk asks about it only once serving.
    desk = ResultDesk(infra.pool, infra.time_source, busy, changes, metrics, scheduler.poke, SERVICE,
                      alone=SoleConsumer(lambda: results_subscriber, settings.sole_consumer_settle_seconds))
    results_subscriber = subscribe_many(infra.broker, settings, infra.metrics, {
        events.GAME_STARTED: desk.on_started,
        events.GAME_FINISHED: desk.on_finished,
        events.CLOCK_FLAGGED: desk.on_flagged,
        events.GAME_ABANDONED: desk.on_abandoned,
    }, settings.pairing_consumer_group, set_aside=infra.set_aside, max_records=settings.result_batch_size)
    timers = TimerPoller(infra.pool, {START_TIMER: scheduler.on_timer, CLOSE_TIMER: scheduler.on_timer},
                         infra.time_source, infra.metrics)
    password_attempts = RateLimiter(infra.redis, SERVICE, settings.password_attempts_burst,
                                    settings.password_attempts_window_seconds)
    servicer = TournamentServicer(infra.pool, infra.outbox, infra.time_source, ratings, hub, settings,
                                  password_attempts)
    grpc_services = [
        GrpcService(
            "arbiter.contracts.TournamentService",
            lambda server: tournament_pb2_grpc.add_TournamentServiceServicer_to_server(servicer, server),
            roles=RPC_ROLES,
            # The calls a person could spam take from their rate-limit bucket.
            rate_limited=frozenset({"CreateTournament", "JoinTournament", "WithdrawTournament", "CancelTournament",
                                   "RevokeInvite"}),
        )
    ]
    try:
        await ServiceRuntime(infra, grpc_services, background=[timers.run, scheduler.run, busy_rebuild.run],
                             watch_only=settings.watch_only).run(stop)
    finally:
        await openings_channel.close()
        await rating_channel.close()
        await clock_channel.close()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def main() -> None:
    """Read settings from the environment and run the service."""
    settings = load_settings(PairingSettings)
    configure_logging(SERVICE, settings.log_level, settings.log_repeat_seconds)
    run_service(lambda: serve(settings), settings.event_loop)


if __name__ == "__main__":
    main()
