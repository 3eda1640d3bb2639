"""The simulated play site: opens every requested game, plays random legal moves, reports the results.

It is external to Arbiter, so it publishes straight to Kafka (no outbox), but every event id
is a function of the game and the ply, so a restarted simulator that publishes again sends the
same events and the consumers' deduplication drops them.

What ends a game here: the rules (`Game.outcome()`), a resignation or an agreed draw (per
behaviour profile), a clock.flagged or game.abandoned from the clock service (T-16, T-17,
T-19: then this play site publishes the GameFinished), or a game.finished published by someone
else (T-15 closing draws, T-18 busy forfeits: the game stops, nothing is published).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
from aiokafka.errors import KafkaError
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.contracts import arena_pb2, arena_pb2_grpc, clock_pb2, clock_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts import Color, Game, Termination
from arbiter.kit import events
from arbiter.kit.auth import TokenSigner, signing_key
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.events import Topic
from arbiter.kit.kafka import BatchHandler, make_broker, make_producer, outbox_publisher, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import OutboxRecord, record_of
from arbiter.kit.settings import KitSettings
from arbiter.kit.timesource import TimeSource
from arbiter.simulator.behaviour import Behaviour, Profiles

log = logging.getLogger(__name__)

PRODUCER = "playsite"
# T-17: how long a dropping player stays away (competition seconds); the clock allows 30.
SHORT_ABSENCE_SECONDS = 10.0
LONG_ABSENCE_SECONDS = 40.0
# A publication is tried this many times, the waits doubling from PUBLISH_RETRY_SECONDS (at most 5 s
# each): about a minute and a half of broker outage before a game gives up.
PUBLISH_ATTEMPTS = 20
PUBLISH_RETRY_SECONDS = 0.2
# Real seconds between two refuels of a Triple Block game the clock does not hold yet (NOT_FOUND).
REFUEL_RETRY_SECONDS = 0.05


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
    # they hold: at the benchmark's fetch wait that was a tenth of tansu's CPU at 1,000 results/s.
    requests_only: bool = False
    # Chaos suite (issue 10): seed a tournament game from the seed and its pairing (the two players,
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
        }


@dataclass(frozen=True)
class Release:
    """Held instant games published at once: their ids, and when (monotonic) the publication began and ended.

    The events are built before the first goes out; `publishing` is when they were handed to
    Kafka, so that the simulator's own preparation is not counted as the services' work.
    """

    game_ids: list[str]
    building: float
    publishing: float
    published: float
    # Games whose GameStarted went out with their result (none when `start_held` started them all).
    started_with_results: int = 0


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


class PlaySite:
    """Consumes game.requested and plays the games; consumes flags, abandons and foreign results."""

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
        self.broker = make_broker(self.settings, self.config.producer, self.metrics)
        # Publications go straight to aiokafka, not through the broker's publish and its middlewares:
        # in `arbiter bench` this process shares the two cores with the system it loads.
        self.producer = make_producer(self.settings, f"arbiter-{self.config.producer}")
        # Instant results go out as whole batches per partition: a `send` per event was most of this
        # process's CPU per game in the benchmark.
        self._publish_batch = outbox_publisher(self.producer)
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

    async def start(self) -> None:
        """Subscribe and connect; games are played from now on."""
        # One consumer for all its topics: each consumer is a fetch loop polling the broker.
        handlers: dict[Topic, BatchHandler] = {events.GAME_REQUESTED: self._on_requested}
        if not self.config.requests_only:
            handlers |= {
                events.CLOCK_FLAGGED: self._on_flagged,
                events.GAME_ABANDONED: self._on_abandoned,
                events.GAME_FINISHED: self._on_finished,
                events.CLOCK_STATE: self._on_clock_state,
            }
        subscribe_many(self.broker, self.settings, self.metrics, handlers, self.config.group_id,
                       max_records=self.config.batch_size)
        if self.config.arena_grpc_addr:
            channel = self._open(self.config.arena_grpc_addr)
            self._channels.append(channel)
            self._arena = arena_pb2_grpc.ArenaServiceStub(channel)
        if self.config.clock_grpc_addr:
            channel = self._open(self.config.clock_grpc_addr)
            self._channels.append(channel)
            self._clock = clock_pb2_grpc.ClockServiceStub(channel)
        await self.producer.start()
        await self.broker.start()
        self._started = True
        if self.config.instant_results:
            self._instant_task = asyncio.create_task(self._instant_loop(), name="instant results")

    def _open(self, address: str) -> grpc.aio.Channel:
        key = signing_key(self.config.auth_signing_key) if self.config.auth_signing_key else None
        return open_channel(address, TokenSigner(key, self.config.producer) if key is not None else None)

    async def stop(self) -> None:
        """Stop every game (publishing nothing more) and disconnect."""
        if self._instant_task is not None:
            self._instant_task.cancel()
            await asyncio.gather(self._instant_task, return_exceptions=True)
            self._instant_task = None
        for live in list(self.games.values()):
            live.close("stopped", None)
        tasks = [live.task for live in self.games.values() if live.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._started:
            await self.broker.stop()
            await self.producer.stop()
            self._started = False
        for channel in self._channels:
            await channel.close()
        self._channels.clear()

    # -- consumed events -------------------------------------------------------------------

    async def _on_requested(self, batch: Sequence[ev.GameRequested]) -> str:
        for request in batch:
            if request.game_id in self.games or request.game_id in self.finished_ids:
                continue  # a redelivery: the game is already hosted
            prefix = self.config.player_prefix
            if prefix and not (request.white_id.startswith(prefix) or request.black_id.startswith(prefix)):
                continue
            self.stats.requested += 1
            self._note_request(request)
            if self.config.instant_results:
                self.finished_ids.add(request.game_id)
                self._instant.append(request)
            else:
                self._host(request)
        return "handled"

    async def _on_flagged(self, batch: Sequence[ev.ClockFlagged]) -> str:
        return self._close_hosted(batch, "flagged")

    async def _on_abandoned(self, batch: Sequence[ev.GameAbandoned]) -> str:
        return self._close_hosted(batch, "abandoned")

    def _close_hosted(self, batch: Sequence[ev.ClockFlagged] | Sequence[ev.GameAbandoned], why: str) -> str:
        """The clock service ended these games: the hosted ones stop and publish their result."""
        for event in batch:
            live = self.games.get(event.game_id)
            if live is not None:
                live.close(why, event)
        return "handled"

    async def _on_finished(self, batch: Sequence[ev.GameFinished]) -> str:
        producer = self.config.producer
        for finished in batch:
            if finished.meta.producer == producer:
                continue  # the echo of an own result (most of this topic in the benchmark)
            # T-15 closing draws and T-18 forfeits: the game stops here and nothing is published.
            live = self.games.get(finished.game_id)
            if live is not None:
                live.close("elsewhere", finished)
            elif finished.game_id not in self.finished_ids:
                # Never opened here (a T-18 forfeit): still a result of a competition we watch.
                self.finished_ids.add(finished.game_id)
                prefix = self.config.player_prefix
                if not prefix or finished.white_id.startswith(prefix) or finished.black_id.startswith(prefix):
                    self.stats.decided_elsewhere += 1
                    self.stats.terminations[common.Termination.Name(finished.termination)] += 1
                    for listener in self.on_finished:
                        listener(finished)
        return "handled"

    async def _on_clock_state(self, batch: Sequence[ev.ClockState]) -> str:
        for state in batch:
            live = self.games.get(state.game_id)
            if live is not None:
                known = (live.clock_ply, len(live.clock_boosted))
                live.clock_ply = max(live.clock_ply, state.ply)
                if state.white_boosted:
                    live.clock_boosted.add(live.request.white_id)
                if state.black_boosted:
                    live.clock_boosted.add(live.request.black_id)
                if live.clock_news is not None and (live.clock_ply, len(live.clock_boosted)) != known:
                    live.clock_news.set()
            for listener in self.on_clock_state:
                listener(state)
        return "handled"

    def _note_request(self, request: ev.GameRequested) -> None:
        """Sample result -> next pairing: the first request of a new round after the round's last result."""
        competition = request.competition
        if competition.kind != common.COMPETITION_KIND_TOURNAMENT:
            return
        seen = self._rounds_seen.get(competition.id, 0)
        if competition.round > seen:
            self._rounds_seen[competition.id] = competition.round
            last = self._last_result.get(competition.id)
            if last is not None and seen > 0:
                now = time.monotonic()
                self.stats.pairing_latencies.append(now - last)
                self.stats.pairing_latency_times.append(now)
                delivery = None
                if request.HasField("requested_at"):
                    since = (self.time_source.now() - request.requested_at.ToDatetime(tzinfo=UTC)).total_seconds()
                    delivery = self.time_source.real_seconds(since)
                self.stats.delivery_latencies.append(delivery)

    @property
    def backlog(self) -> int:
        """Requested games waiting for their instant result."""
        return len(self._instant)

    async def _instant_loop(self) -> None:
        """Publish results for queued requests at `result_rate` per second, a slice every `instant_every_seconds`."""
        allowance = 0.0
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.config.instant_every_seconds)
            now = time.monotonic()
            if self.holding:
                last = now
                continue
            rate = self.result_rate
            allowance = allowance + (now - last) * rate if rate > 0 else float(len(self._instant))
            allowance = min(allowance, max(rate * 0.1, 1.0)) if rate > 0 else allowance
            last = now
            count = min(int(allowance), len(self._instant))
            if count <= 0:
                continue
            allowance -= count
            slice_ = [self._instant.popleft() for _ in range(count)]
            if self.config.instant_after_seconds[1] > 0:
                for request in slice_:
                    self._host_instant(request)
            else:
                try:
                    await self._instant_slice(slice_)
                except Exception as error:
                    # A slice that could not be published must not stop every later result.
                    self.stats.errors += len(slice_)
                    log.error("instant games failed", extra={
                        "game_ids": [request.game_id for request in slice_], "error": repr(error)})

    async def start_held(self) -> int:
        """Publish the GameStarted of every queued instant game not started yet, at once; how many went out.

        A round's games start together and end minutes later: started here, a held round's
        release is its results alone, as when the last game of a round ends.
        """
        if not self.holding:
            raise RuntimeError("start_held starts held games: set `holding` first")
        now = events.timestamp(self.time_source.now())
        waiting = [request for request in self._instant if request.game_id not in self._held_started]
        # Marked before the publication: a call meanwhile (or a release) must not start them again.
        for request in waiting:
            self._held_started[request.game_id] = now
        records = [self._record(self._started_event(request, now), f"{request.game_id}/started", now)
                   for request in waiting]
        if records:
            await self._publish_records(records)
        self.stats.started += len(waiting)
        return len(waiting)

    async def release_held(self) -> Release:
        """Publish the results of every queued instant game at once; say which and when."""
        building = time.monotonic()
        slice_ = list(self._instant)
        self._instant.clear()
        started_before = self.stats.started
        publishing = await self._instant_slice(slice_)
        return Release([request.game_id for request in slice_], building, publishing, time.monotonic(),
                       self.stats.started - started_before)

    async def _instant_slice(self, requests: Sequence[ev.GameRequested]) -> float:
        """Start and finish a slice of instant games: their GameStarted and GameFinished events in whole batches.

        Both kinds go out together (one produce request, one wait): they are on different topics,
        whose records no consumer sees in a fixed order anyway, and each service takes a start
        that arrives after its game's result (clock, pairing's busy players). A game `start_held`
        started has only its result to publish. Returns when (monotonic) the built events began
        to be published.
        """
        now = events.timestamp(self.time_source.now())
        records = []
        finished = []
        fresh = 0
        for request in requests:
            live = LiveGame(request, self.game_rng(request), plies=2)
            live.moved.update((request.white_id, request.black_id))
            started_at = self._held_started.pop(request.game_id, None)
            if started_at is None:
                started_at = now
                fresh += 1
                records.append(self._record(self._started_event(request, now), f"{request.game_id}/started", now))
            result, termination = self._instant_result(live)
            event = self._finished_event(live, result, termination, now, started_at)
            finished.append((event, termination))
            records.append(self._record(event, f"{request.game_id}/finished", now))
        publishing = time.monotonic()
        await self._publish_records(records)
        sent = time.monotonic()
        self.stats.started += fresh
        for request, (event, termination) in zip(requests, finished, strict=True):
            self._note_finished(request, event, termination, sent)
        return publishing

    def _host_instant(self, request: ev.GameRequested) -> None:
        """An instant game whose result waits `instant_after_seconds`, hosted like a played game meanwhile."""
        live = LiveGame(request, self.game_rng(request))
        self.games[request.game_id] = live

        async def run() -> None:
            try:
                await self._instant_game(request, live)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.stats.errors += 1
                log.exception("game failed", extra={"game_id": request.game_id})
            finally:
                self.games.pop(request.game_id, None)

        live.task = asyncio.create_task(run(), name=f"instant game {request.game_id}")

    def game_rng(self, request: ev.GameRequested) -> random.Random:
        """The random source of one game: from the seed and the game id, or its pairing (`results_by_pairing`)."""
        if self.config.results_by_pairing and request.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            low, high = sorted((request.white_id, request.black_id))
            return random.Random(f"{self.config.seed}/pairing/{low}/{high}/{request.game_in_pairing or 1}")
        return random.Random(f"{self.config.seed}/{request.game_id}")

    async def _instant_game(self, request: ev.GameRequested, live: LiveGame) -> None:
        """A hosted instant game (`instant_after_seconds`): started now, its result after the wait."""
        live.moved.update((request.white_id, request.black_id))
        held_start = self._held_started.pop(request.game_id, None)
        if held_start is None:
            live.started_at = self.time_source.now()
            await self._publish(self._started_event(request, events.timestamp(live.started_at)),
                                f"{request.game_id}/started")
            self.stats.started += 1
        else:  # started by `start_held` before the holding ended
            live.started_at = held_start.ToDatetime(tzinfo=UTC)
        result, termination = self._instant_result(live)
        low, high = self.config.instant_after_seconds
        if high > 0 and await self._pause(live, live.rng.uniform(low, high)):
            if live.ending is not None and live.ending[0] in ("flagged", "abandoned"):
                await self._ended_outside(live)
            else:
                self._count_elsewhere(live)
            return
        live.plies = 2
        await self._finish(live, result, termination)

    def _instant_result(self, live: LiveGame) -> tuple[int, int]:
        """(result, termination) of an instant game, the first draw from its random source."""
        request = live.request
        if self.config.results_by_pairing and request.competition.kind == common.COMPETITION_KIND_TOURNAMENT:
            winner = live.rng.choice((*sorted((request.white_id, request.black_id)), ""))
            result = common.GAME_RESULT_DRAW if not winner else (
                common.GAME_RESULT_WHITE_WINS if winner == request.white_id else common.GAME_RESULT_BLACK_WINS)
        else:
            result = live.rng.choice(
                (common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_BLACK_WINS, common.GAME_RESULT_DRAW))
        termination = common.TERMINATION_DRAW_AGREED if result == common.GAME_RESULT_DRAW \
            else common.TERMINATION_RESIGNATION
        return result, termination

    @staticmethod
    def _started_event(request: ev.GameRequested, started_at: Timestamp) -> ev.GameStarted:
        return ev.GameStarted(
            game_id=request.game_id, white_id=request.white_id, black_id=request.black_id, started_at=started_at,
            competition=request.competition, variant=request.variant, time_control=request.time_control,
            start_fen=request.opening.fen,
        )

    # -- hosting games ---------------------------------------------------------------------

    def _host(self, request: ev.GameRequested, *, take_seats: bool = True,
              deadline: datetime | None = None) -> LiveGame:
        live = LiveGame(request, self.game_rng(request), deadline=deadline)
        self.games[request.game_id] = live
        live.task = asyncio.create_task(self._run(live, take_seats), name=f"game {request.game_id}")
        return live

    async def play_casual(
        self, white_id: str, black_id: str, *, variant: str = "international", hold_seconds: float | None = None,
        time_control: common.TimeControl | None = None, speed: int = common.SPEED_BLITZ,
        think_seconds: tuple[float, float] | None = None,
    ) -> LiveGame:
        """Open a casual game (T-18's "already playing", or a Triple Block game) and play it in the background.

        With `hold_seconds` (competition time) the game is agreed drawn when that time has passed.
        """
        self._casual_serial += 1
        game_id = f"casual-{self.config.seed}-{self._casual_serial}-{white_id}-{black_id}"
        request = ev.GameRequested(
            game_id=game_id, competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL, id=game_id),
            variant=variant, white_id=white_id, black_id=black_id, speed=speed, rated=False,
            time_control=time_control or common.TimeControl(fischer=common.FischerControl(
                base_seconds=600, increment_seconds=5)),
        )
        self.stats.casual_games += 1
        deadline = self.time_source.now() + timedelta(seconds=hold_seconds) if hold_seconds is not None else None
        live = self._host(request, take_seats=False, deadline=deadline)
        live.pace = think_seconds
        return live

    def _seat(self, player_id: str) -> asyncio.Lock:
        lock = self._seats.get(player_id)
        if lock is None:
            lock = self._seats[player_id] = asyncio.Lock()
        return lock

    async def _run(self, live: LiveGame, take_seats: bool) -> None:
        request = live.request
        # A player sits at one board at a time: the second game of a home-and-away pairing
        # (T-12) waits for the first. Sorted acquisition cannot deadlock.
        locks = [self._seat(p) for p in sorted({request.white_id, request.black_id})] if take_seats else []
        held: list[asyncio.Lock] = []
        try:
            for lock in locks:
                await lock.acquire()
                held.append(lock)
            await self._play(live)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats.errors += 1
            log.exception("game failed", extra={"game_id": request.game_id})
        finally:
            for lock in held:
                lock.release()
            self.games.pop(request.game_id, None)
            self.finished_ids.add(request.game_id)

    async def _play(self, live: LiveGame) -> None:
        request = live.request
        if live.ending is not None and live.ending[0] in ("elsewhere", "stopped"):
            self._count_elsewhere(live)
            return
        live.started_at = self.time_source.now()
        await self._publish(self._started_event(request, events.timestamp(live.started_at)),
                            f"{request.game_id}/started")
        self.stats.started += 1
        # Whoever shows up connects now; the clock tells T-16 (one absent) from T-19 (both absent) by it.
        for player in (request.white_id, request.black_id):
            if self.profiles.of(player) is not Behaviour.NEVER_SHOWS:
                await self._presence(live, player, online=True, serial=0)
        fen = request.opening.fen or None
        game = Game(request.variant, fen)
        players = {Color.WHITE: request.white_id, Color.BLACK: request.black_id}
        correspondence = request.time_control.WhichOneof("kind") == "triple_block"
        pace = live.pace or (
            self.config.correspondence_think_seconds if correspondence else self.config.think_seconds)
        absences: dict[str, int] = {}
        while True:
            if live.end.is_set():
                await self._ended_outside(live)
                return
            outcome = game.outcome()
            if outcome is not None:
                if outcome.termination is Termination.NO_LEGAL_MOVES:
                    result = common.GAME_RESULT_WHITE_WINS if outcome.winner is Color.WHITE \
                        else common.GAME_RESULT_BLACK_WINS
                    await self._finish(live, result, common.TERMINATION_NO_MOVES)
                else:
                    await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_RULE)
                return
            if live.plies >= self.config.max_plies or (
                    live.deadline is not None and self.time_source.now() >= live.deadline):
                await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED)
                return
            mover = players[game.position.turn]
            opponent = players[game.position.turn.opponent]
            behaviour = self.profiles.of(mover)
            if behaviour is Behaviour.NEVER_SHOWS:
                # T-16: the clock decides. The waiting opponent says again that they are here, in
                # case the first word reached the clock before the game did (then T-19 would apply).
                if not await self._pause(live, 5.0) and self.profiles.of(opponent) is not Behaviour.NEVER_SHOWS:
                    await self._presence(live, opponent, online=True, serial=3)
                await self._until_end_or_deadline(live)
                continue
            if mover not in live.moved and behaviour is Behaviour.BOOSTS:
                await self._boost(live, mover)
            think = live.rng.uniform(*pace)
            if correspondence and behaviour is Behaviour.REFUELS and live.rng.random() < self.config.refuel_chance:
                # TB-3: the clock is full when the turn starts; refuel once some of it has been used.
                if await self._pause(live, think / 2):
                    continue
                await self._refuel(live, mover)
                think /= 2
            if await self._pause(live, think):
                continue
            if (behaviour is Behaviour.RESIGNS and live.plies >= self.config.resign_after_ply
                    and live.rng.random() < self.config.resign_chance):
                result = common.GAME_RESULT_BLACK_WINS if mover == request.white_id else common.GAME_RESULT_WHITE_WINS
                await self._finish(live, result, common.TERMINATION_RESIGNATION)
                return
            if (behaviour is Behaviour.OFFERS_DRAWS and live.plies >= self.config.draw_offer_after_ply
                    and live.rng.random() < self.config.draw_offer_chance
                    and self.profiles.of(opponent) is not Behaviour.NEVER_SHOWS
                    and live.rng.random() < self.config.draw_accept_chance):
                await self._finish(live, common.GAME_RESULT_DRAW, common.TERMINATION_DRAW_AGREED)
                return
            move = live.rng.choice(game.legal_moves())
            game.play(move)
            live.plies += 1
            live.moved.add(mover)
            moved = ev.MoveMade(
                game_id=request.game_id, player_id=mover, ply=live.plies, move=move.notation,
                fen_after=game.position.to_fen(), played_at=events.timestamp(self.time_source.now()),
            )
            await self._publish(moved, f"{request.game_id}/m{live.plies}")
            self.stats.moves += 1
            self.stats.move_times.append(time.monotonic())
            if behaviour in (Behaviour.DISCONNECTS_SHORT, Behaviour.DISCONNECTS_LONG) and mover not in absences:
                absences[mover] = 1
                away = SHORT_ABSENCE_SECONDS if behaviour is Behaviour.DISCONNECTS_SHORT else LONG_ABSENCE_SECONDS
                await self._absent(live, mover, away)

    async def _pause(self, live: LiveGame, competition_seconds: float) -> bool:
        """Think for `competition_seconds`; True when the game was ended from outside meanwhile."""
        real = self.time_source.real_seconds(competition_seconds)
        if real <= 0:
            await asyncio.sleep(0)
            return live.end.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.end.wait(), real)
        return live.end.is_set()

    async def _until_end_or_deadline(self, live: LiveGame) -> None:
        """Wait until the game is ended from outside or its hold (`deadline`, competition time) has passed."""
        if live.deadline is None:
            await live.end.wait()
            return
        while not live.end.is_set() and self.time_source.now() < live.deadline:
            await self._pause(live, (live.deadline - self.time_source.now()).total_seconds())

    async def _absent(self, live: LiveGame, player_id: str, competition_seconds: float) -> None:
        """T-17: drop after the first move, come back later (if the game still runs)."""
        await self._presence(live, player_id, online=False, serial=1)
        if await self._pause(live, competition_seconds):
            return
        await self._presence(live, player_id, online=True, serial=2)

    async def _presence(self, live: LiveGame, player_id: str, *, online: bool, serial: int) -> None:
        change = ev.PlayerPresenceChanged(
            game_id=live.request.game_id, player_id=player_id, online=online,
            at=events.timestamp(self.time_source.now()),
        )
        await self._publish(change, f"{live.request.game_id}/presence/{player_id}/{serial}")
        self.stats.presence_changes += 1

    async def _boost(self, live: LiveGame, player_id: str) -> None:
        """AR-5: ask the arena for the boost before the own first move."""
        request = live.request
        if (self._arena is None or request.competition.kind != common.COMPETITION_KIND_ARENA
                or not request.boost_allowed or player_id in live.boosted):
            return
        try:
            await self._arena.Boost(arena_pb2.BoostRequest(
                actor=common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED),
                arena_id=request.competition.id, game_id=request.game_id,
            ), timeout=self.config.call_timeout_seconds)
        except grpc.aio.AioRpcError as error:
            self.stats.boost_refusals += 1
            self.stats.last_refusal = f"Boost: {error.code().name}: {error.details()}"
            return
        live.boosted.add(player_id)
        self.stats.boosts += 1
        # As a player sees the halved clock before moving: a first move that reached the clock before
        # the arena's BoostTaken would leave the boost uncharged (AR-5), and the game unboosted.
        if self._clock is not None:
            await self._clock_shows(live, lambda: player_id in live.clock_boosted,
                                    time.monotonic() + self.config.call_timeout_seconds)

    async def _refuel(self, live: LiveGame, player_id: str) -> None:
        """TB-3: move bank time to the clock during the own turn, once the clock knows that turn began.

        A refuel a few competition seconds into the turn is a few real milliseconds at a high time
        scale: the clock may not have applied the opponent's move yet and would refuse it ("it is
        <opponent>'s turn"). So it waits for the ClockState of the last ply. Before the first move
        no ClockState comes; the clock answers NOT_FOUND until it has seen the start, so that is
        tried again.
        """
        if self._clock is None:
            return
        give_up = time.monotonic() + self.config.call_timeout_seconds
        # Without word from the clock it is tried anyway: the clock's answer says why it refuses.
        await self._clock_shows(live, lambda: live.clock_ply >= live.plies, give_up)
        while not live.end.is_set():
            try:
                await self._clock.Refuel(clock_pb2.RefuelRequest(
                    actor=common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED),
                    game_id=live.request.game_id, amount_seconds=0,
                ), timeout=self.config.call_timeout_seconds)
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.NOT_FOUND and time.monotonic() < give_up:
                    await asyncio.sleep(REFUEL_RETRY_SECONDS)
                    continue
                self.stats.refuel_refusals += 1
                self.stats.last_refusal = f"Refuel: {error.code().name}: {error.details()}"
                return
            self.stats.refuels += 1
            return

    async def _clock_shows(self, live: LiveGame, shown: Callable[[], bool], give_up: float) -> None:
        """Wait until the game's ClockStates make `shown()` true, the game ends or `give_up` (monotonic) passes."""
        news = live.clock_news = live.clock_news or asyncio.Event()
        while True:
            news.clear()  # before the look: a state arriving after it sets the event again
            left = give_up - time.monotonic()
            if shown() or live.end.is_set() or left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), left)

    async def _ended_outside(self, live: LiveGame) -> None:
        assert live.ending is not None
        why, detail = live.ending
        request = live.request
        if why == "flagged":
            self.stats.flagged += 1
            white_lost = detail.loser_id == request.white_id
            result = common.GAME_RESULT_BLACK_WINS if white_lost else common.GAME_RESULT_WHITE_WINS
            termination = detail.reason or common.TERMINATION_TIME
            if detail.loser_never_sat:
                termination = common.TERMINATION_NEVER_SAT
            await self._finish(live, result, termination)
        elif why == "abandoned":
            self.stats.abandoned += 1
            await self._finish(live, common.GAME_RESULT_BOTH_LOSE, common.TERMINATION_BOTH_ABSENT)
        else:
            self._count_elsewhere(live)

    def _count_elsewhere(self, live: LiveGame) -> None:
        if live.ending is not None and live.ending[0] == "elsewhere":
            self.stats.decided_elsewhere += 1
            self.stats.terminations[common.Termination.Name(live.ending[1].termination)] += 1
            for listener in self.on_finished:
                listener(live.ending[1])

    async def _finish(self, live: LiveGame, result: int, termination: int) -> None:
        """Publish the one final word on the game."""
        now = events.timestamp(self.time_source.now())
        started_at = events.timestamp(live.started_at) if live.started_at is not None else now
        finished = self._finished_event(live, result, termination, now, started_at)
        await self._publish(finished, f"{live.request.game_id}/finished")
        self._note_finished(live.request, finished, termination, time.monotonic())

    @staticmethod
    def _finished_event(live: LiveGame, result: int, termination: int, finished_at: Timestamp,
                        started_at: Timestamp) -> ev.GameFinished:
        request = live.request
        return ev.GameFinished(
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

    async def _publish(self, event: Message, event_id: str) -> None:
        """Publish with a deterministic event id, keyed by the topic's aggregate field."""
        topic = events.topic_of(event)
        event.meta.event_id = event_id  # type: ignore[attr-defined]
        events.stamp_meta(event, self.config.producer, self.time_source.now())
        payload, key = event.SerializeToString(), topic.key_of(event).encode()
        headers = [("event-id", event_id.encode()), ("event-type", events.event_type_of(event).encode())]

        async def send() -> None:
            await (await self.producer.send(topic.name, payload, key=key, headers=headers))

        await self._until_taken(send)
        self.metrics.events_published.labels(self.config.producer, topic.name).inc()

    def _record(self, event: Message, event_id: str, occurred_at: Timestamp) -> OutboxRecord:
        """`event` stamped as `_publish` stamps it, ready for a batch publication."""
        event.meta.event_id = event_id  # type: ignore[attr-defined]
        return record_of(events.stamp_meta(event, self.config.producer, occurred_at))

    async def _publish_records(self, records: Sequence[OutboxRecord]) -> None:
        """Publish records (same keys, partitions and headers as `_publish`) as whole batches per partition."""
        await self._until_taken(lambda: self._publish_batch(records))
        for topic_name, count in Counter(record.topic for record in records).items():
            self.metrics.events_published.labels(self.config.producer, topic_name).inc(count)

    async def _until_taken(self, send: Callable[[], Awaitable[None]]) -> None:
        """Run `send` until the broker acknowledges it.

        A real play site keeps a game's events until the broker takes them: a broker pause must
        not lose a game's result. The ids are fixed, so a retry that was in fact delivered is a
        duplicate the services drop.
        """
        for attempt in range(PUBLISH_ATTEMPTS):
            try:
                await send()
                return
            except (KafkaError, TimeoutError, OSError):
                if attempt == PUBLISH_ATTEMPTS - 1:
                    raise
                self.stats.publish_retries += 1
                await asyncio.sleep(min(PUBLISH_RETRY_SECONDS * 2 ** attempt, 5.0))
