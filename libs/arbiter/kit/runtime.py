"""Running one service: connect, migrate, serve gRPC and /metrics, consume, relay, shut down cleanly."""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import prometheus_client
import redis.asyncio as aioredis
from faststream.kafka import KafkaBroker

from arbiter.kit.auth import Role, ServiceKey, TokenSigner, parse_keys, signing_key
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.eventloop import EventLoop, run_on
from arbiter.kit.events import PRODUCERS
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.grpcserver import GrpcService, start_grpc_server
from arbiter.kit.health import Check, Readiness
from arbiter.kit.kafka import (
    TopicKeeper,
    ensure_topics,
    kafka_security,
    make_broker,
    make_outbox_producer,
    outbox_publisher,
    run_lag_monitor,
)
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox, OutboxRelay
from arbiter.kit.poison import SetAside, StoredSetAside
from arbiter.kit.ratelimit import RateLimiter
from arbiter.kit.redisclient import RedisPools
from arbiter.kit.retention import RetentionSweeper
from arbiter.kit.settings import KitSettings
from arbiter.kit.timesource import TimeSource
from arbiter.kit.watch import Foreground, WatchFeed, WatchMetrics

log = logging.getLogger(__name__)

BackgroundTask = Callable[[asyncio.Event], Awaitable[None]]


def tune_garbage_collector(young_threshold: int) -> Callable[[], None]:
    """Fewer, cheaper collections for a wired service; returns the function that restores Python's pace.

    With Python's defaults (a young scan every 700 allocations) a batch of events or a pairing
    pass of thousands of objects set off full collections that scanned everything the process
    holds, a large share of the clock's CPU on moves and of an arena pass's time (figures:
    docs/performance.md; tests/bench/bench_clock_service.py, bench_arena_service.py). What
    exists once wired (modules, clients) is frozen out of every collection, and young objects
    are scanned every `young_threshold` allocations, so a batch's short-lived objects are mostly
    freed before any scan. The older generations keep their default pace: waiting longer
    between full collections made each one longer. 0 changes nothing.
    """
    if not young_threshold:
        return lambda: None
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young_threshold, before[1], before[2])

    def restore() -> None:
        gc.set_threshold(*before)
        gc.unfreeze()

    return restore


@dataclass
class Infrastructure:
    """The clients one service holds, created by `connect` and closed by `close`."""

    service: str
    settings: KitSettings
    metrics: Metrics
    time_source: TimeSource
    pool: asyncpg.Pool
    # The Redis pools (arbiter.kit.redisclient.RedisPools); `redis` is the gRPC calls' own,
    # `background_redis` the consumers', timers' and background loops'.
    redis_pools: RedisPools
    redis: aioredis.Redis
    background_redis: aioredis.Redis
    broker: KafkaBroker
    outbox: Outbox
    # Where the service's consumers put the records they cannot handle (arbiter.kit.poison).
    set_aside: SetAside
    auth_keys: dict[str, ServiceKey] = field(default_factory=dict)
    signer: TokenSigner | None = None
    # The calls being served (and what a service adds): Watch streams give way to them.
    foreground: Foreground = field(default_factory=Foreground)
    _watch_feed: WatchFeed | None = field(default=None, repr=False)

    def open_channel(self, address: str) -> grpc.aio.Channel:
        """A channel to another service's gRPC API, carrying this service's token when auth is on."""
        return open_channel(address, self.signer)

    def watch_feed(self, max_streams: int) -> WatchFeed:
        """The process's one Redis subscription serving every Watch stream (arbiter.kit.watch), made once."""
        if self._watch_feed is None:
            pools = self.redis_pools
            self._watch_feed = WatchFeed(
                lambda: pools.connection("watch", socket_connect_timeout=self.settings.redis_pool_wait_seconds,
                                         socket_keepalive=True),
                max_streams=max_streams, metrics=WatchMetrics.create(self.metrics), foreground=self.foreground,
            )
        return self._watch_feed

    async def close(self) -> None:
        """Close every client (the broker is stopped by the runtime)."""
        await self.pool.close()
        if self._watch_feed is not None:
            await self._watch_feed.close()
        await self.redis_pools.aclose()


async def connect(settings: KitSettings, service: str, migrations_dir: Path, *, topics: bool = True) -> Infrastructure:
    """Create the pool (schema = service), apply migrations, ensure topics (if `topics`), build broker and outbox."""
    # A `_created` twin of every counter and histogram series doubles what each scrape reads and
    # Prometheus stores, for a start time that process_start_time_seconds already gives.
    prometheus_client.disable_created_metrics()
    metrics = Metrics(service)
    metrics.describe_build(importlib.metadata.version("arbiter"), settings.arbiter_revision)
    time_source = TimeSource(settings.time_scale, settings.time_origin)
    # Parse the keys before connecting anything: a bad key must stop the start at once.
    auth_keys = parse_keys(settings.auth_keys.get_secret_value())
    own_key = signing_key(settings.auth_signing_key.get_secret_value())
    # Each service signs its calls in its own role: its key must be one that may sign for it.
    signer = TokenSigner(own_key, Role(service), service) if own_key else None
    pool = await create_pool(settings.database_url, service, settings.db_pool_min, settings.db_pool_max,
                             settings.replica_id)
    applied = await migrate(pool, service, migrations_in(migrations_dir, service))
    if applied:
        log.info("migrations applied", extra={"versions": applied})
    if topics:
        await ensure_topics(settings.kafka_bootstrap_servers, settings.kafka_partitions,
                            security=kafka_security(settings))
    redis_pools = RedisPools(settings.redis_url, service, settings.redis_pool_wait_seconds)
    broker = make_broker(settings, service)
    return Infrastructure(
        service=service, settings=settings, metrics=metrics, time_source=time_source, pool=pool,
        redis_pools=redis_pools, redis=redis_pools.pool("requests", settings.redis_request_connections),
        background_redis=redis_pools.pool("background", settings.redis_background_connections),
        broker=broker, outbox=Outbox(service, time_source, settings.kafka_max_message_bytes),
        set_aside=StoredSetAside(pool, metrics), auth_keys=auth_keys, signer=signer,
    )


@dataclass
class ServiceRuntime:
    """Serves one service until SIGINT/SIGTERM or `stop`, then shuts down in order.

    A watch server (`watch_only`, the WATCH_ONLY setting) serves the Watch streams of its gRPC
    services and nothing else: no broker, no outbox relay, no sweeper, no background work, and
    every unary call refused; it is ready once PostgreSQL and Redis answer.
    """

    infra: Infrastructure
    grpc_services: Sequence[GrpcService]
    background: Sequence[BackgroundTask] = field(default_factory=tuple)
    watch_only: bool = False

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Start everything, wait for the stop signal, stop everything."""
        infra = self.infra
        settings = infra.settings
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        if not self.watch_only:
            infra.metrics.expect_published(topic for topic, users in PRODUCERS.items() if infra.service in users)
        metrics_server, metrics_thread = infra.metrics.serve(settings.metrics_host, settings.metrics_port)
        producer = None if self.watch_only else make_outbox_producer(settings, infra.service)
        if producer is not None:
            await infra.broker.start()
            await producer.start()
        limiter = RateLimiter(infra.redis, infra.service, settings.rate_limit_burst,
                              settings.rate_limit_window_seconds)
        server, health_servicer, port = await start_grpc_server(
            settings.grpc_host, settings.grpc_port, self.grpc_services, infra.metrics,
            max_message_bytes=settings.grpc_max_request_bytes, auth_keys=infra.auth_keys, limiter=limiter,
            foreground=infra.foreground, streams_only=self.watch_only,
        )
        dependencies: dict[str, Check] = {
            "postgresql": lambda: _answers_query(infra.pool), "redis": infra.redis.ping}
        if producer is not None:
            dependencies["kafka"] = _broker_answers(infra, TopicKeeper(settings, infra.metrics))
        readiness = Readiness(
            dependencies, health_servicer, [service.full_name for service in self.grpc_services], infra.metrics,
            interval=settings.readiness_check_seconds, timeout=settings.readiness_timeout_seconds,
        )
        await readiness.check_once()
        work: list[BackgroundTask] = [readiness.run, infra.metrics.event_loop_lag.run]
        if producer is not None:
            relay = OutboxRelay(infra.pool, infra.service,
                                outbox_publisher(producer, infra.outbox.max_message_bytes), infra.metrics,
                                keep_published=settings.outbox_keep_published_hours > 0)
            sweeper = RetentionSweeper(infra.pool, infra.metrics,
                                       timedelta(hours=settings.processed_events_retention_hours),
                                       settings.retention_sweep_seconds,
                                       published_retention=timedelta(hours=settings.outbox_keep_published_hours))
            work += [relay.run, sweeper.run, lambda s: run_lag_monitor(infra.broker, infra.metrics, s),
                     *self.background]
        tasks = [asyncio.create_task(self._guard(task, stop), name=getattr(task, "__qualname__", "task"))
                 for task in work]
        # Everything is wired now: freeze it out of the collections from here on.
        restore_collector = tune_garbage_collector(settings.gc_young_threshold)
        stop_watching_collector = infra.metrics.watch_garbage_collector()
        log.info(
            "service ready",
            extra={"grpc": f"{settings.grpc_host}:{port}", "watch_only": self.watch_only,
                   "metrics": f"http://{settings.metrics_host}:{metrics_server.server_port}/metrics"},
        )
        try:
            await stop.wait()
        finally:
            log.info("shutting down")
            await health_servicer.enter_graceful_shutdown()
            await server.stop(settings.grpc_grace_seconds)
            done, pending = await asyncio.wait(tasks, timeout=5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if producer is not None:
                await producer.stop()
                await infra.broker.stop()
            await infra.close()
            metrics_server.shutdown()
            metrics_thread.join(timeout=2)
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
            stop_watching_collector()
            restore_collector()
        failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
        if failed:
            raise SystemExit(f"{infra.service}: background task {failed[0].get_name()} failed")

    @staticmethod
    async def _guard(task: BackgroundTask, stop: asyncio.Event) -> None:
        try:
            await task(stop)
        except Exception:
            # A dead background loop must not leave a half-working service behind.
            log.exception("background task failed; stopping the service")
            stop.set()
            raise


def _broker_answers(infra: Infrastructure, topics: TopicKeeper) -> Check:
    """The readiness check of Kafka: the broker answers and the service's topics are there."""
    timeout = infra.settings.readiness_timeout_seconds

    async def answers() -> bool:
        return await infra.broker.ping(timeout) and await topics.check()

    return answers


async def _answers_query(pool: asyncpg.Pool) -> bool:
    """PostgreSQL answers a query through the service's own pool (a connection it can get, too)."""
    return await pool.fetchval("SELECT 1") == 1


def run_service(main: Callable[[], Coroutine[Any, Any, None]], event_loop: EventLoop) -> None:
    """Run a service's async main on the chosen event loop; Ctrl-C and SIGTERM end it cleanly."""
    run_on(event_loop, main)
