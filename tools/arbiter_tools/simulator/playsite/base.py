"""The play site's ground: its settings, config and counters, a hosted game, and what every layer shares.

The layers build on each other: `PlaySiteBase` (this state, publishing with fixed event ids, the
events a game publishes), `live.LiveGames` (played games), `instant.InstantResults` (answered at
once) and `router.PlaySite` (the consumed topics, routed to them).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import grpc
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.structs import RecordMetadata
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.contracts import arena_pb2_grpc, clock_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.auth import Role, signer_for
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.kafka import kafka_security, make_broker, make_producer, outbox_publisher
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import OutboxRecord, record_of
from arbiter.kit.settings import KitSettings
from arbiter.kit.timesource import TimeSource
from arbiter.kit.trace import TRACE_HEADER
from arbiter_tools.simulator.behaviour import Profiles
from arbiter_tools.simulator.playsite.brokerloss import PublishedLog, anchor_held

log = logging.getLogger(__name__)

Taken = TypeVar("Taken")

PRODUCER = "playsite"
# A publication is tried this many times, the waits doubling from PUBLISH_RETRY_SECONDS up to a cap:
# together they are the broker outage a game rides out before it gives up.
PUBLISH_ATTEMPTS = 20
PUBLISH_RETRY_SECONDS = 0.2


class SimulatorSettings(KitSettings):
    """The kit settings the play site needs: only Kafka; the rest is unused by a simulator."""

    redis_url: str = ""
    database_url: str = ""
    grpc_port: int = 0
    metrics_port: int = 0


@dataclass(frozen=True)
class PlaySiteConfig:
    """How the play site plays: pace, chances per behaviour, where the services are."""

    seed: int = 1
    # Competition seconds between two plies (uniform); Fischer games.
    think_seconds: tuple[float, float] = (1.0, 4.0)
    # Competition seconds between two plies of a Triple Block game.
    correspondence_think_seconds: tuple[float, float] = (600.0, 7200.0)
    group_id: str = "playsite"
    producer: str = PRODUCER
    resign_after_ply: int = 10
    resign_chance: float = 0.04
    draw_offer_after_ply: int = 20
    draw_offer_chance: float = 0.06
    draw_accept_chance: float = 0.5
    refuel_chance: float = 0.2
    # A game longer than this is agreed drawn (random play can wander for ever in some variants).
    max_plies: int = 300
    arena_grpc_addr: str = ""
    clock_grpc_addr: str = ""
    # `id:secret` to sign service tokens with (AUTH_SIGNING_KEY) when the services require them.
    auth_signing_key: str = ""
    call_timeout_seconds: float = 5.0
    # Records per batch from the consumed topics.
    batch_size: int = 500
    # Load benchmark: answer each request at once with GameStarted + GameFinished (no moves), at most
    # `result_rate` results per real second (0: no limit), white or black winning at random.
    instant_results: bool = False
    result_rate: float = 0.0
    # Real seconds between two publications of instant results: each publication is one record batch
    # per topic, whatever number of results it holds.
    instant_every_seconds: float = 0.01
    # Load benchmark: read game.requested alone. Games that end as they start (`instant_results`
    # with no `instant_after_seconds`) can meet no flag, abandonment, clock state or result decided
    # elsewhere, and on tansu each fetch that returns records of those busy topics lists every batch
    # they hold, a cost to the broker at the benchmark's rates (figures: docs/performance.md).
    requests_only: bool = False
    # For the chaos suite: seed a tournament game from the seed and its pairing (the two players,
    # unordered, and T-12's leg) instead of the game id, which holds the random tournament id. With
    # `instant_results` the result is then drawn between the two players whatever their colours, so
    # two runs of one seeded scenario decide the same results even though T-14's Berger draw (seeded
    # by the tournament id) gives a round robin pair other colours and another round.
    results_by_pairing: bool = False
    # Competition seconds (uniform, drawn per game after its result) from an instant game's
    # GameStarted to its GameFinished; (0, 0): at once. Meanwhile the game is hosted, so a flag or
    # an abandon from the clock still ends it as it would end a played game.
    instant_after_seconds: tuple[float, float] = (0.0, 0.0)
    # Host only games with a player whose id starts with this (a run's own population): a new
    # consumer group reads game.requested from the beginning, and other runs' games are not ours.
    player_prefix: str = ""
    # Real seconds each published event is kept, to be published again should the broker lose its
    # storage (0: nothing kept, the broker not watched); and between two looks at the broker.
    keep_published_seconds: float = 600.0
    broker_check_seconds: float = 2.0


@dataclass
class PlaySiteStats:
    """What the play site did, for the live view, the reports and the benchmark."""

    requested: int = 0
    started: int = 0
    finished: int = 0
    moves: int = 0
    decided_elsewhere: int = 0
    flagged: int = 0
    abandoned: int = 0
    presence_changes: int = 0
    boosts: int = 0
    boost_refusals: int = 0
    refuels: int = 0
    refuel_refusals: int = 0
    casual_games: int = 0
    errors: int = 0
    # Publications tried again because the broker did not answer (a pause, a restart).
    publish_retries: int = 0
    # Brokers found to have lost their storage, and the kept events published again to the next.
    broker_losses: int = 0
    republished: int = 0
    last_refusal: str = ""
    terminations: Counter[str] = field(default_factory=Counter)
    finish_times: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    move_times: deque[float] = field(default_factory=lambda: deque(maxlen=200_000))
    # Real seconds from the result that completed a round to the first request of the next round.
    pairing_latencies: list[float] = field(default_factory=list)
    # When (time.monotonic()) each of those was measured, to see when in a stage the slow ones came.
    pairing_latency_times: list[float] = field(default_factory=list)
    # The part of each of those after the pairing service stamped the request (requested_at): its
    # commit, outbox relay, broker and this consumer; the rest is the result's way in and the pairing.
    # One per sample above (None for a request without the stamp), so a stage picks both alike.
    delivery_latencies: list[float | None] = field(default_factory=list)

    @property
    def playing(self) -> int:
        """Games started and not finished."""
        return max(0, self.started - self.finished - self.decided_elsewhere)

    def rate(self, times: deque[float], window: float = 5.0) -> float:
        """Events per real second over the last `window` seconds."""
        cutoff = time.monotonic() - window
        recent = sum(1 for t in reversed(times) if t >= cutoff) if times else 0
        return recent / window

    def as_dict(self) -> dict[str, Any]:
        """The counters as plain data."""
        return {
            "requested": self.requested, "started": self.started, "finished": self.finished, "moves": self.moves,
            "decided_elsewhere": self.decided_elsewhere, "flagged": self.flagged, "abandoned": self.abandoned,
            "presence_changes": self.presence_changes, "boosts": self.boosts, "boost_refusals": self.boost_refusals,
            "refuels": self.refuels, "refuel_refusals": self.refuel_refusals, "casual_games": self.casual_games,
            "errors": self.errors, "terminations": dict(self.terminations), "last_refusal": self.last_refusal,
            "broker_losses": self.broker_losses, "republished": self.republished,
        }


@dataclass
class LiveGame:
    """One game the play site hosts."""

    request: ev.GameRequested
    rng: random.Random
    end: asyncio.Event = field(default_factory=asyncio.Event)
    # Set by whoever ends the game from outside: ("flagged", ClockFlagged), ("abandoned", ...),
    # ("elsewhere", GameFinished) or ("stopped", None).
    ending: tuple[str, Any] | None = None
    moved: set[str] = field(default_factory=set)
    # AR-5: players whose boost the arena accepted, and those whose boost the clock applied (its
    # ClockState says so); GameFinished reports the latter: the game was played with their boost.
    boosted: set[str] = field(default_factory=set)
    clock_boosted: set[str] = field(default_factory=set)
    # The highest ply a ClockState of this game showed (the clock applied every move up to it), and
    # what a wait for the clock's word (a refuel, a boost) listens to (made by the first such wait).
    clock_ply: int = 0
    clock_news: asyncio.Event | None = None
    plies: int = 0
    started_at: datetime | None = None
    deadline: datetime | None = None
    # Competition seconds between two plies; None: the play site's pace for the time control.
    pace: tuple[float, float] | None = None
    task: asyncio.Task[None] | None = None

    def close(self, why: str, detail: Any) -> None:
        """End the game from outside (the first reason wins)."""
        if self.ending is None:
            self.ending = (why, detail)
        self.end.set()
        if self.clock_news is not None:
            self.clock_news.set()  # a wait for the clock gives up: the game is over


class PlaySiteBase:
    """The state every layer of the play site shares, its publications and the events it builds."""

    def __init__(
        self, bootstrap_servers: str, time_source: TimeSource, profiles: Profiles | None = None,
        config: PlaySiteConfig | None = None, *, session_timeout_ms: int = 6000,
    ) -> None:
        self.config = config or PlaySiteConfig()
        self.time_source = time_source
        self.profiles = profiles or Profiles(seed=self.config.seed)
        self.settings = SimulatorSettings(
            kafka_bootstrap_servers=bootstrap_servers, kafka_session_timeout_ms=session_timeout_ms,
        )
        self.metrics = Metrics(self.config.producer)
        self.broker = make_broker(self.settings, self.config.producer)
        # Publications go straight to aiokafka, not through the broker's publish and its middlewares:
        # in `arbiter bench` this process shares the two cores with the system it loads.
        self.producer = make_producer(self.settings, f"arbiter-{self.config.producer}")
        # Instant results go out as whole batches per partition: a `send` per event was most of this
        # process's CPU per game in the benchmark.
        self._publish_batch = outbox_publisher(self.producer)
        self.published = PublishedLog(self.config.keep_published_seconds)
        self._broker_watch: asyncio.Task[None] | None = None
        self.stats = PlaySiteStats()
        self.games: dict[str, LiveGame] = {}
        self.finished_ids: set[str] = set()
        self.on_finished: list[Callable[[ev.GameFinished], None]] = []
        self.on_clock_state: list[Callable[[ev.ClockState], None]] = []
        self._seats: dict[str, asyncio.Lock] = {}
        self._last_result: dict[str, float] = {}
        self._rounds_seen: dict[str, int] = {}
        self._channels: list[grpc.aio.Channel] = []
        self._arena: arena_pb2_grpc.ArenaServiceStub | None = None
        self._clock: clock_pb2_grpc.ClockServiceStub | None = None
        self._casual_serial = 0
        self._started = False
        self.result_rate = self.config.result_rate
        # Load benchmark: while set, queued instant games wait for `release_held`.
        self.holding = False
        self._instant: deque[ev.GameRequested] = deque()
        # Load benchmark: held instant games already started by `start_held`, and when (competition time).
        self._held_started: dict[str, Timestamp] = {}
        # Load benchmark: when each instant result was published (real monotonic seconds).
        self.result_sent: dict[str, float] = {}
        self._instant_task: asyncio.Task[None] | None = None

    def _open(self, address: str) -> grpc.aio.Channel:
        return open_channel(address, signer_for(self.config.auth_signing_key, Role.PLAY_SITE, self.config.producer))

    @staticmethod
    def _started_event(request: ev.GameRequested, started_at: Timestamp) -> ev.GameStarted:
        return ev.GameStarted(
            meta=same_chain(request),
            game_id=request.game_id, white_id=request.white_id, black_id=request.black_id, started_at=started_at,
            competition=request.competition, variant=request.variant, time_control=request.time_control,
            start_fen=request.opening.fen,
        )

    @staticmethod
    def _finished_event(
        live: LiveGame,
        result: common.GameResult,
        termination: common.Termination,
        finished_at: Timestamp,
        started_at: Timestamp,
    ) -> ev.GameFinished:
        request = live.request
        return ev.GameFinished(
            meta=same_chain(request),
            game_id=request.game_id, competition=request.competition, variant=request.variant, speed=request.speed,
            white_id=request.white_id, black_id=request.black_id, result=result, termination=termination,
            white_sat=request.white_id in live.moved, black_sat=request.black_id in live.moved,
            rated=request.rated, white_boosted=request.white_id in live.clock_boosted,
            black_boosted=request.black_id in live.clock_boosted, plies=live.plies, finished_at=finished_at,
            started_at=started_at,
        )

    def _note_finished(self, request: ev.GameRequested, finished: ev.GameFinished, termination: int,
                       sent: float) -> None:
        """Count a published result and tell the listeners; `sent`: when the broker took it (monotonic)."""
        if request.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            self._last_result[request.competition.id] = sent
        if self.config.instant_results:
            self.result_sent[request.game_id] = sent
        self.stats.finished += 1
        self.stats.terminations[common.Termination.Name(termination)] += 1
        self.stats.finish_times.append(sent)
        for listener in self.on_finished:
            listener(finished)

    def game_rng(self, request: ev.GameRequested) -> random.Random:
        """The random source of one game: from the seed and the game id, or its pairing (`results_by_pairing`)."""
        if self.config.results_by_pairing and request.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            low, high = sorted((request.white_id, request.black_id))
            return random.Random(f"{self.config.seed}/pairing/{low}/{high}/{request.game_in_pairing or 1}")
        return random.Random(f"{self.config.seed}/{request.game_id}")

    async def _publish(self, event: Message, event_id: str) -> None:
        """Publish with a deterministic event id, keyed by the topic's aggregate field; keep it."""
        record = self._record(event, event_id, events.timestamp(self.time_source.now()))
        headers = [("event-id", event_id.encode()), ("event-type", record.event_type.encode()),
                   (TRACE_HEADER, record.trace_id.encode())]

        async def send() -> RecordMetadata:
            return await (await self.producer.send(record.topic, record.payload, key=record.key.encode(),
                                                   headers=headers))

        taken = await self._until_taken(send)
        self.published.acknowledged(record, TopicPartition(taken.topic, taken.partition), taken.offset)
        self.metrics.events_published.labels(self.config.producer, record.topic).inc()

    def _record(self, event: Message, event_id: str, occurred_at: Timestamp) -> OutboxRecord:
        """`event` stamped as `_publish` stamps it, ready for a batch publication."""
        event.meta.event_id = event_id  # type: ignore[attr-defined]  # every event has an EventMeta
        return record_of(events.stamp_meta(event, self.config.producer, occurred_at))

    async def _publish_records(self, records: Sequence[OutboxRecord]) -> None:
        """Publish records (keys, partitions and headers as `_publish`) in whole batches per partition; keep them."""
        await self._until_taken(lambda: self._publish_batch(records))
        self.published.add(records)
        for topic_name, count in Counter(record.topic for record in records).items():
            self.metrics.events_published.labels(self.config.producer, topic_name).inc(count)

    async def _until_taken(self, send: Callable[[], Awaitable[Taken]]) -> Taken:
        """Run `send` until the broker acknowledges it.

        A real play site keeps a game's events until the broker takes them: a broker pause must
        not lose a game's result. The ids are fixed, so a retry that was in fact delivered is a
        duplicate the services drop.
        """
        for attempt in range(PUBLISH_ATTEMPTS):
            try:
                return await send()
            except (KafkaError, TimeoutError, OSError):
                if attempt == PUBLISH_ATTEMPTS - 1:
                    raise
                self.stats.publish_retries += 1
                await asyncio.sleep(min(PUBLISH_RETRY_SECONDS * 2 ** attempt, 5.0))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _watch_broker(self) -> None:
        """Look whether the broker still holds what it took; when it lost it, publish the kept events again.

        A real play site is advised the same (docs/integration.md, "Delivery and idempotence"): the
        consumers drop by event id what they had already applied.
        """
        consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.kafka_bootstrap_servers, group_id=None,
                                    enable_auto_commit=False, client_id=f"arbiter-{self.config.producer}-watch",
                                    **kafka_security(self.settings))
        await consumer.start()
        again: list[OutboxRecord] = []
        try:
            while True:
                await asyncio.sleep(self.config.broker_check_seconds)
                anchor = self.published.anchor
                if anchor is not None and await anchor_held(consumer, anchor) is False:
                    again += self.published.lost()
                    self.stats.broker_losses += 1
                    log.warning("the broker lost the events it had taken from us: publishing again those kept since",
                                extra={"events": len(again), "anchor": anchor.event_id})
                if not again:
                    continue
                try:
                    await self._publish_records(again)
                except (KafkaError, TimeoutError, OSError) as error:
                    log.error("could not publish the kept events again; trying at the next look",
                              extra={"error": repr(error), "events": len(again)})
                    continue
                self.stats.republished += len(again)
                again = []
        finally:
            await consumer.stop()


def same_chain(request: ev.GameRequested) -> common.EventMeta:
    """The meta of an event about a requested game: in its request's chain, as a play site keeps it."""
    return common.EventMeta(trace_id=request.meta.trace_id)
