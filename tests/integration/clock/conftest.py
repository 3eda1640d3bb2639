"""Helpers for the clock service tests: a stack per module, a play-site producer, an event tap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from google.protobuf.message import Message

from arbiter.contracts import clock_pb2, clock_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.kafka import SettledKeys, ensure_topics
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import ManualTimeSource, TimeSource
from arbiter.vocabulary import Side
from arbiter_tools.devstack.stack import SystemStack
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind
from services.clock.flags import FlagPoller
from services.clock.handlers import ClockHandlers
from services.clock.hot import LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.publisher import StatePublisher
from services.clock.rebuild import HotRebuild
from services.clock.servicer import ClockServicer
from services.clock.settings import ClockSettings
from services.clock.store import CorrespondenceStore, LiveCopies
from tests.support.polling import eventually

MIGRATIONS = Path(__file__).resolve().parents[3] / "services" / "clock" / "migrations"


@dataclass(frozen=True)
class ClockBackend:
    """The clock's stores for an in-process test: settings, a schema of its own, Redis under its own prefix."""

    settings: ClockSettings
    pool: asyncpg.Pool
    redis: aioredis.Redis

    @property
    def prefix(self) -> str:
        """The Redis key prefix of this backend."""
        return self.settings.clock_redis_prefix


@contextlib.asynccontextmanager
async def clock_backend(infra_env: dict[str, str], name: str, **settings: Any) -> AsyncIterator[ClockBackend]:
    """Migrated PostgreSQL schema and Redis prefix for the clock's parts (no Kafka); both removed after."""
    tag = uuid.uuid4().hex[:8]
    schema = f"clock_{name}_{tag}"
    clock_settings = ClockSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0,
        clock_redis_prefix=f"clock-{name}-{tag}", **settings,
    )
    pool = await create_pool(clock_settings.database_url, schema)
    redis = aioredis.from_url(clock_settings.redis_url)
    try:
        await migrate(pool, schema, migrations_in(MIGRATIONS, "clock"))
        yield ClockBackend(clock_settings, pool, redis)
    finally:
        await pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await pool.close()
        keys = [key async for key in redis.scan_iter(f"{clock_settings.clock_redis_prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


def started(game_id: str, at: datetime) -> ev.GameStarted:
    """GameStarted of a ten-minute game, white `<id>-w` against black `<id>-b`, started at `at`."""
    event = ev.GameStarted(game_id=game_id, white_id=f"{game_id}-w", black_id=f"{game_id}-b", variant="international")
    event.time_control.fischer.base_seconds = 600
    event.started_at.FromDatetime(at)
    return event


def move(game_id: str, ply: int, at: datetime) -> ev.MoveMade:
    """MoveMade of ply `ply` of a game `started` gave (white plays the odd plies)."""
    event = ev.MoveMade(game_id=game_id, player_id=f"{game_id}-{'w' if ply % 2 else 'b'}", ply=ply, move="x")
    event.played_at.FromDatetime(at)
    return event


def running_out(game_id: str, now_ms: int, in_ms: int) -> ClockedGame:
    """A started game whose first mover (present) runs out `in_ms` from `now_ms`."""
    record = ClockedGame(game_id)
    ops.on_started(record, GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=10),
                   now_ms - 10_000 + in_ms, now_ms)
    record.presence[Side.WHITE].seen = record.presence[Side.BLACK].seen = True
    return record


@contextlib.asynccontextmanager
async def polling(poller: FlagPoller) -> AsyncIterator[None]:
    """Run `poller` in the background."""
    stop = asyncio.Event()
    task = asyncio.create_task(poller.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def live_store(pool: asyncpg.Pool, redis: aioredis.Redis, prefix: str,
                     metrics: ClockMetrics | None = None) -> LiveStore:
    """A live store on `prefix` as one replica wires it: Redis made whole from PostgreSQL when it is lost."""
    live = LiveStore(redis, prefix, 60_000, 60_000)
    rebuild = HotRebuild(live, CorrespondenceStore(pool, live), pool, metrics or ClockMetrics.create(Metrics("clock")),
                         over_ttl_ms=60_000, rebuild_over_ms=60_000, lease_ms=60_000)
    await rebuild.recover()
    return live


async def live_and_poller(backend: ClockBackend, clock: TimeSource,
                          ownership: SettledKeys | None = None) -> tuple[LiveStore, FlagPoller]:
    """A live store on the backend's Redis prefix and a flag poller over it (one replica, or those `ownership` says)."""
    live = await live_store(backend.pool, backend.redis, backend.prefix)
    poller = FlagPoller(live, CorrespondenceStore(backend.pool, live), backend.pool, Outbox("clock", clock), clock,
                        ClockMetrics.create(Metrics("clock")), backend.settings, ownership=ownership)
    return live, poller


async def flags_saved(pool: asyncpg.Pool, game_id: str) -> int:
    """How many flags of `game_id` the outbox holds."""
    return await pool.fetchval("SELECT count(*) FROM outbox WHERE event_id = $1", f"flag:{game_id}")


async def flagged(pool: asyncpg.Pool, game_id: str) -> None:
    """Wait until the flag of `game_id` is saved."""
    await eventually(lambda: flags_saved(pool, game_id), f"the flag of {game_id} saved")


def launch(infra_env: dict[str, str], state_dir: Path, time_scale: float, **extra: str) -> SystemStack:
    """The clock service as a real process on the session's broker, Redis and PostgreSQL.

    Each stack writes under its own Redis prefix, so deadlines left by another test never fire here.
    """
    env = {
        "CLOCK_REDIS_PREFIX": f"clock-test-{uuid.uuid4().hex[:8]}",
        # tansu answers a JoinGroup after half the session timeout, and the service joins six
        # groups one after the other: a short timeout keeps its start (and restart) quick.
        "KAFKA_SESSION_TIMEOUT_MS": "1200", "KAFKA_HEARTBEAT_INTERVAL_MS": "300",
        **extra,
    }
    stack = SystemStack(
        state_dir, time_scale=time_scale, free_ports=True, environ={**os.environ, **infra_env},
        extra_env=env, say=lambda _line: None,
    )
    stack.start_infrastructure()
    stack.start_services(("clock",))
    stack.wait_serving(timeout=60, names=("clock",))
    return stack


def time_source_of(stack: SystemStack) -> TimeSource:
    """The competition clock every process of `stack` shares (TIME_SCALE, TIME_ORIGIN)."""
    origin = datetime.fromisoformat(stack.time_origin) if stack.time_origin else None
    return TimeSource(stack.time_scale, origin)


class PlaySite:
    """Publishes what the play site publishes, stamped with the stack's competition time."""

    def __init__(self, bootstrap: str, time_source: TimeSource) -> None:
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=1)
        self.time = time_source

    async def start(self) -> None:
        """Connect."""
        await self.producer.start()

    async def stop(self) -> None:
        """Disconnect."""
        await self.producer.stop()

    def now(self) -> datetime:
        """Competition time now."""
        return self.time.now()

    async def send(self, event: Message) -> None:
        """Publish one event on its topic, keyed by its aggregate id."""
        topic = events.topic_of(event)
        if not event.meta.event_id:  # type: ignore[attr-defined]
            event.meta.event_id = uuid.uuid4().hex  # type: ignore[attr-defined]
        await self.producer.send_and_wait(topic.name, event.SerializeToString(), key=topic.key_of(event).encode())

    async def send_many(self, items: Iterable[Message]) -> None:
        """Publish many events, waiting for every acknowledgement."""
        futures = []
        for event in items:
            topic = events.topic_of(event)
            if not event.meta.event_id:  # type: ignore[attr-defined]
                event.meta.event_id = uuid.uuid4().hex  # type: ignore[attr-defined]
            futures.append(await self.producer.send(
                topic.name, event.SerializeToString(), key=topic.key_of(event).encode()
            ))
        await asyncio.gather(*futures)

    async def request(
        self, game_id: str, white: str, black: str, *, base: int = 0, inc: int = 0,
        tb: tuple[int, int, bool] | None = None,
        variant: str = "international", competition: int = common.COMPETITION_KIND_TOURNAMENT,
        boost_allowed: bool = False, rated: bool = True,
    ) -> None:
        """GameRequested from pairing or arena."""
        event = ev.GameRequested(
            game_id=game_id, white_id=white, black_id=black, variant=variant, rated=rated,
            boost_allowed=boost_allowed, competition=common.CompetitionRef(kind=competition, id="c-1"),
            time_control=control(base, inc, tb),
        )
        event.requested_at.FromDatetime(self.now())
        await self.send(event)

    def started_event(
        self, game_id: str, white: str, black: str, *, at: datetime | None = None, base: int = 0, inc: int = 0,
        tb: tuple[int, int, bool] | None = None, variant: str = "international",
    ) -> ev.GameStarted:
        """GameStarted from the play site (time control only for casual games)."""
        event = ev.GameStarted(game_id=game_id, white_id=white, black_id=black, variant=variant)
        if base or inc or tb:
            event.time_control.CopyFrom(control(base, inc, tb))
            event.competition.kind = common.COMPETITION_KIND_CASUAL
        event.started_at.FromDatetime(at or self.now())
        return event

    async def start_game(self, game_id: str, white: str, black: str, **kwargs: Any) -> None:
        """Publish GameStarted now."""
        await self.send(self.started_event(game_id, white, black, **kwargs))

    def move_event(self, game_id: str, player: str, ply: int, at: datetime | None = None) -> ev.MoveMade:
        """MoveMade stamped now (or `at`)."""
        event = ev.MoveMade(game_id=game_id, player_id=player, ply=ply, move="32-28")
        event.played_at.FromDatetime(at or self.now())
        return event

    async def move(self, game_id: str, player: str, ply: int, at: datetime | None = None) -> None:
        """Publish one move."""
        await self.send(self.move_event(game_id, player, ply, at))

    def presence_event(
        self, game_id: str, player: str, online: bool, at: datetime | None = None
    ) -> ev.PlayerPresenceChanged:
        """PlayerPresenceChanged stamped now (or `at`)."""
        event = ev.PlayerPresenceChanged(game_id=game_id, player_id=player, online=online)
        event.at.FromDatetime(at or self.now())
        return event

    async def presence(self, game_id: str, player: str, online: bool, at: datetime | None = None) -> None:
        """Publish one presence change."""
        await self.send(self.presence_event(game_id, player, online, at))

    async def boost(self, game_id: str, player: str) -> None:
        """BoostTaken from the arena (AR-5)."""
        event = ev.BoostTaken(game_id=game_id, arena_id="a-1", player_id=player)
        event.at.FromDatetime(self.now())
        await self.send(event)

    async def finish(self, game_id: str, white: str, black: str) -> None:
        """GameFinished from the play site."""
        event = ev.GameFinished(game_id=game_id, white_id=white, black_id=black,
                                result=common.GAME_RESULT_DRAW, termination=common.TERMINATION_DRAW_AGREED)
        event.finished_at.FromDatetime(self.now())
        await self.send(event)


class DirectSite(PlaySite):
    """The play site handing each event straight to the clock's handlers, in order: no broker between them.

    For tests that drive time themselves (ManualTimeSource): an event is applied when `send` returns.
    """

    def __init__(self, handlers: ClockHandlers, time_source: TimeSource) -> None:
        self.time = time_source
        self.routes: dict[type[Message], Callable[[list[Any]], Awaitable[str]]] = {
            ev.GameRequested: handlers.on_requested, ev.GameStarted: handlers.on_started,
            ev.PlayerPresenceChanged: handlers.on_presence, ev.MoveMade: handlers.on_moves,
            ev.GameFinished: handlers.on_finished, ev.BoostTaken: handlers.on_boost,
        }

    async def start(self) -> None:
        """Nothing to connect."""

    async def stop(self) -> None:
        """Nothing to disconnect."""

    async def send(self, event: Message) -> None:
        """Apply one event as the clock's consumer would."""
        await self.routes[type(event)]([event])

    async def send_many(self, items: Iterable[Message]) -> None:
        """Apply events one after another."""
        for event in items:
            await self.send(event)


@dataclass
class ClockInProcess:
    """The clock service's parts in this process on real Redis, PostgreSQL and Kafka, on a time the test moves.

    Flags are decided when the test calls `decide` (the poller's look), so no wait depends on the host.
    """

    backend: ClockBackend
    time: ManualTimeSource
    site: DirectSite
    poller: FlagPoller
    servicer: ClockServicer

    async def decide(self) -> int:
        """One look of the flag poller at the current time; how many games it claimed."""
        return await self.poller.fire_due()

    async def get(self, game_id: str) -> clock_pb2.Clock:
        """GetClock as the service answers it."""
        return await self.servicer.GetClock(clock_pb2.GetClockRequest(game_id=game_id), None)

    async def verdicts(self, game_id: str, kind: str = "flag") -> list[Message]:
        """The verdicts of `kind` ("flag", "abandon") saved for `game_id`, as the outbox will publish them."""
        rows = await self.backend.pool.fetch("SELECT payload FROM outbox WHERE event_id = $1 ORDER BY id",
                                             f"{kind}:{game_id}")
        decode = ev.ClockFlagged if kind == "flag" else ev.GameAbandoned
        return [decode.FromString(row["payload"]) for row in rows]


@contextlib.asynccontextmanager
async def clock_in_process(infra_env: dict[str, str], name: str, start: datetime) -> AsyncIterator[ClockInProcess]:
    """Handlers, flag poller and servicer of one replica wired as main.py wires them, time at `start`."""
    time_source = ManualTimeSource(start)
    async with clock_backend(infra_env, name) as backend:
        await ensure_topics(backend.settings.kafka_bootstrap_servers, 1)
        metrics = Metrics("clock")
        clock_metrics = ClockMetrics.create(metrics)
        live = await live_store(backend.pool, backend.redis, backend.prefix, clock_metrics)
        correspondence = CorrespondenceStore(backend.pool, live)
        copies = LiveCopies(backend.pool, backend.prefix)
        outbox = Outbox("clock", time_source)
        publisher = StatePublisher(backend.settings.kafka_bootstrap_servers, f"clock-{name}-test", metrics)
        await publisher.start()
        try:
            handlers = ClockHandlers(live, correspondence, copies, outbox, publisher, time_source, clock_metrics)
            poller = FlagPoller(live, correspondence, backend.pool, outbox, time_source, clock_metrics,
                                backend.settings)
            servicer = ClockServicer(live, correspondence, copies, outbox, time_source)
            yield ClockInProcess(backend, time_source, DirectSite(handlers, time_source), poller, servicer)
        finally:
            await publisher.stop()


def control(base: int, inc: int, tb: tuple[int, int, bool] | None) -> common.TimeControl:
    """A Fischer (base, inc seconds) or Triple Block (increment days, bank days, GT) time control."""
    if tb is not None:
        return common.TimeControl(triple_block=common.TripleBlockControl(
            increment_days=tb[0], bank_days=tb[1], guaranteed_time=tb[2]))
    return common.TimeControl(fischer=common.FischerControl(base_seconds=base, increment_seconds=inc))


class EventTap:
    """Reads clock.flagged, game.abandoned and clock.state from their current end, by game id."""

    TOPICS = (events.CLOCK_FLAGGED, events.GAME_ABANDONED, events.CLOCK_STATE)

    def __init__(self, bootstrap: str) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                         fetch_max_wait_ms=20)
        self.received: dict[str, dict[str, list[tuple[float, Message]]]] = {
            t.name: defaultdict(list) for t in self.TOPICS
        }
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Assign every partition at its end, so only events from now on are seen."""
        await self.consumer.start()
        await self.consumer.topics()  # fetches the metadata partitions_for_topic reads
        partitions = []
        for topic in self.TOPICS:
            for number in sorted(self.consumer.partitions_for_topic(topic.name) or {0}):
                partitions.append(TopicPartition(topic.name, number))
        self.consumer.assign(partitions)
        await self.consumer.seek_to_end(*partitions)
        for partition in partitions:
            await self.consumer.position(partition)
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        by_name = {t.name: t for t in self.TOPICS}
        while True:
            batches = await self.consumer.getmany(timeout_ms=50, max_records=5000)
            arrived = time.time()
            for partition, records in batches.items():
                topic = by_name[partition.topic]
                for record in records:
                    event = topic.decode(record.value)
                    self.received[topic.name][event.game_id].append((arrived, event))  # type: ignore[attr-defined]

    async def stop(self) -> None:
        """Stop reading."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.stop()

    def flags(self, game_id: str) -> list[ev.ClockFlagged]:
        """ClockFlagged events seen for `game_id`."""
        return [e for _, e in self.received[events.CLOCK_FLAGGED.name].get(game_id, [])]  # type: ignore[misc]

    def abandons(self, game_id: str) -> list[ev.GameAbandoned]:
        """GameAbandoned events seen for `game_id`."""
        return [e for _, e in self.received[events.GAME_ABANDONED.name].get(game_id, [])]  # type: ignore[misc]

    def states(self, game_id: str) -> list[ev.ClockState]:
        """ClockState events seen for `game_id`, in arrival order."""
        return [e for _, e in self.received[events.CLOCK_STATE.name].get(game_id, [])]  # type: ignore[misc]

    def verdicts(self, game_id: str) -> list[Message]:
        """Flags and abandons of `game_id`."""
        return [*self.flags(game_id), *self.abandons(game_id)]


async def sleep_until(time_source: TimeSource, instant: datetime) -> None:
    """Sleep in real time until competition time reaches `instant`."""
    await time_source.sleep_until(instant)


def after(start: datetime, seconds: float) -> datetime:
    """`start` plus `seconds` of competition time."""
    return start + timedelta(seconds=seconds)


def whole_ms(instant: datetime) -> datetime:
    """`instant` cut to whole milliseconds (the service's resolution), so expected instants are exact."""
    return instant.replace(microsecond=instant.microsecond // 1000 * 1000)


def ms(instant: datetime) -> int:
    """An instant in ms since the epoch."""
    return round(instant.timestamp() * 1000)


class ClockClient:
    """The gRPC ClockService of a stack."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.stub = clock_pb2_grpc.ClockServiceStub(self.channel)

    async def get(self, game_id: str) -> clock_pb2.Clock:
        """GetClock."""
        return await self.stub.GetClock(clock_pb2.GetClockRequest(game_id=game_id), timeout=10)

    async def close(self) -> None:
        """Close the channel."""
        await self.channel.close()


def actor(player_id: str) -> common.Actor:
    """A registered player acting."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Unique ids per test (the broker, Redis and PostgreSQL are shared by the session)."""
    token = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{token}"


async def open_tools(stack: SystemStack) -> AsyncIterator[tuple[PlaySite, EventTap, ClockClient, TimeSource]]:
    """Producer, tap and gRPC client on a stack (an async generator for module fixtures)."""
    time_source = time_source_of(stack)
    site = PlaySite(stack.kafka_bootstrap, time_source)
    tap = EventTap(stack.kafka_bootstrap)
    client = ClockClient(stack.services["clock"].grpc_address)
    await site.start()
    await tap.start()
    try:
        yield site, tap, client, time_source
    finally:
        await tap.stop()
        await site.stop()
        await client.close()
