"""A stand-in for the play site (and, for absences, the clock service) in the pairing tests.

It reads game.requested for the tournaments it follows, opens each game once (GameStarted),
and after a short delay reports a seeded random result (GameFinished). It can be told that a
player never shows (the clock's ClockFlagged NEVER_SAT, or GameAbandoned when both are
missing, then the play site's own GameFinished relay), that a tournament's games never end
(T-15), or that a player is busy in a casual game elsewhere (T-18). It records every event
of the followed tournaments so a test can recompute the standings with the rules core.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.standings import StandingRow
from arbiter.competition.tournament_flow import (
    ScoredResult,
    final_standings,
    result_of_abandon,
    result_of_finish,
    result_of_flag,
    round_bye_points,
)
from arbiter.competition.types import Format
from arbiter.contracts import clock_pb2, clock_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.convert import GAME_RESULT, TERMINATION
from arbiter.kit.events import timestamp
from arbiter.kit.kafka import topic_partitions
from arbiter.vocabulary import Side

WATCHED = (
    events.GAME_REQUESTED, events.GAME_FINISHED, events.TOURNAMENT_STARTED, events.ROUND_PAIRED,
    events.TOURNAMENT_FINISHED, events.TOURNAMENT_CANCELLED,
)


@dataclass
class Behaviour:
    """How the play site treats one tournament's games."""

    seed: int = 0
    # Real seconds between opening a game and reporting its result.
    result_delay: float = 0.05
    # T-15: never report a result; the tournament must close them as draws.
    hold: bool = False
    # T-16/T-19: these players never sit down.
    absent: frozenset[str] = frozenset()
    # Result weights: white wins, draw, black wins.
    weights: tuple[int, int, int] = (4, 2, 4)
    # Up to this many more real seconds per game (seeded), so a round's results come one by one.
    jitter: float = 0.0


@dataclass
class Decided:
    """The result that decided one game, as the rules core scores it, and where it came from."""

    game: PlayedGame
    source: str


@dataclass
class TournamentLog:
    """Everything seen of one tournament."""

    behaviour: Behaviour
    started: ev.TournamentStarted | None = None
    rounds: dict[int, ev.RoundPaired] = field(default_factory=dict)
    requests: dict[str, list[ev.GameRequested]] = field(default_factory=lambda: defaultdict(list))
    # The first result published for each game (by us or by the pairing service).
    decided: dict[str, Decided] = field(default_factory=dict)
    pairing_results: dict[str, ev.GameFinished] = field(default_factory=dict)
    finished: ev.TournamentFinished | None = None
    cancelled: ev.TournamentCancelled | None = None
    opened: set[str] = field(default_factory=set)


class PlaySite:
    """Opens requested games and reports their results on the real broker."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.logs: dict[str, TournamentLog] = {}
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._games: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Condition()
        self.paused = False

    async def start(self) -> None:
        """Connect and read every watched topic from its current end (no consumer group: no rebalance wait)."""
        self._producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        await self._producer.start()
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                                          enable_auto_commit=False)
        await self._consumer.start()
        partitions = await topic_partitions(self._consumer, [topic.name for topic in WATCHED])
        missing = {topic.name for topic in WATCHED} - {partition.topic for partition in partitions}
        assert not missing, f"the services have not made {sorted(missing)}"
        self._consumer.assign(partitions)
        await self._consumer.seek_to_end(*partitions)
        for partition in partitions:
            await self._consumer.position(partition)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop reading and publishing."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for task in list(self._games):
            task.cancel()
        await asyncio.gather(*self._games, return_exceptions=True)
        if self._consumer is not None:
            await self._consumer.stop()
        if self._producer is not None:
            await self._producer.stop()

    def follow(self, tournament_id: str, behaviour: Behaviour | None = None) -> TournamentLog:
        """Start handling one tournament's games."""
        log = self.logs.setdefault(tournament_id, TournamentLog(behaviour or Behaviour()))
        if behaviour is not None:
            log.behaviour = behaviour
        return log

    async def wait_for(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Block until `predicate()` holds after some event, or fail naming `what`."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(predicate), timeout)
            except TimeoutError:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}") from None

    async def wait_end(self, tournament_id: str, timeout: float) -> TournamentLog:
        """Block until the tournament finished or was cancelled."""
        log = self.logs[tournament_id]
        await self.wait_for(lambda: log.finished is not None or log.cancelled is not None, timeout,
                            f"the end of {tournament_id}")
        return log

    async def publish(self, event: object) -> None:
        """Publish one event as the play site would, keyed by its aggregate id."""
        assert self._producer is not None
        topic = events.topic_of(event)  # type: ignore[arg-type]
        events.stamp_meta(event, "playsite", datetime.now(UTC))  # type: ignore[arg-type]
        await self._producer.send_and_wait(topic.name, event.SerializeToString(),  # type: ignore[attr-defined]
                                           key=topic.key_of(event).encode())  # type: ignore[arg-type]

    async def occupy(self, player_id: str) -> str:
        """T-18: put a player in a casual game elsewhere on the site (it never ends); return its id."""
        game_id = f"casual-{uuid.uuid4().hex[:10]}"
        await self.publish(ev.GameStarted(
            game_id=game_id, white_id=player_id, black_id=f"stranger-{uuid.uuid4().hex[:6]}",
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL), variant="international",
        ))
        return game_id

    # -- reading --------------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            batches = await self._consumer.getmany(timeout_ms=200)
            for partition, records in batches.items():
                topic = events.topic_named(partition.topic)
                for record in records:
                    self._on(topic, topic.decode(record.value))
            if batches:
                async with self._changed:
                    self._changed.notify_all()

    def _on(self, topic: events.Topic, event: object) -> None:
        if isinstance(event, ev.GameRequested):
            log = self.logs.get(event.competition.id)
            if log is None:
                return
            log.requests[event.game_id].append(event)
            if event.game_id not in log.opened and not self.paused:
                log.opened.add(event.game_id)
                task = asyncio.create_task(self._play(log, event))
                self._games.add(task)
                task.add_done_callback(self._games.discard)
        elif isinstance(event, ev.GameFinished):
            log = self.logs.get(event.competition.id)
            if log is None or event.meta.producer != "pairing":
                return
            log.pairing_results[event.game_id] = event
            if event.game_id not in log.decided:
                log.decided[event.game_id] = Decided(_game_of(event, event.competition.round), "pairing")
        elif isinstance(event, ev.TournamentStarted):
            if event.tournament_id in self.logs:
                self.logs[event.tournament_id].started = event
        elif isinstance(event, ev.RoundPaired):
            if event.tournament_id in self.logs:
                self.logs[event.tournament_id].rounds[event.round] = event
        elif isinstance(event, ev.TournamentFinished):
            if event.tournament_id in self.logs:
                self.logs[event.tournament_id].finished = event
        elif isinstance(event, ev.TournamentCancelled) and event.tournament_id in self.logs:
            self.logs[event.tournament_id].cancelled = event

    # -- playing --------------------------------------------------------------------------------

    async def _play(self, log: TournamentLog, request: ev.GameRequested) -> None:
        behaviour = log.behaviour
        white, black = request.white_id, request.black_id
        await self.publish(ev.GameStarted(
            game_id=request.game_id, white_id=white, black_id=black, started_at=timestamp(datetime.now(UTC)),
            competition=request.competition, variant=request.variant, time_control=request.time_control,
        ))
        if behaviour.hold:
            return
        spread = random.Random(f"{behaviour.seed}:{request.game_id}:delay").uniform(0, behaviour.jitter)
        await asyncio.sleep(behaviour.result_delay + spread)
        if request.game_id in log.decided:
            return  # closed meanwhile by the tournament (T-15)
        white_absent, black_absent = white in behaviour.absent, black in behaviour.absent
        rated = request.rated
        if white_absent and black_absent:
            # The clock service's word first (T-19), then the play site's relay, which must be ignored.
            await self.publish(ev.GameAbandoned(game_id=request.game_id, white_id=white, black_id=black))
            scored = result_of_abandon(tournament_rated=rated)
            self._decide(log, request, scored, "abandoned")
            await self._finish(request, common.GAME_RESULT_BOTH_LOSE, common.TERMINATION_BOTH_ABSENT, False, False)
            return
        if white_absent or black_absent:
            loser = white if white_absent else black
            await self.publish(ev.ClockFlagged(
                game_id=request.game_id, loser_id=loser, reason=common.TERMINATION_NEVER_SAT, loser_never_sat=True,
            ))
            scored = result_of_flag(Side.WHITE if white_absent else Side.BLACK, loser_never_sat=True,
                                    tournament_rated=rated)
            self._decide(log, request, scored, "flagged")
            result = common.GAME_RESULT_BLACK_WINS if white_absent else common.GAME_RESULT_WHITE_WINS
            await self._finish(request, result, common.TERMINATION_NEVER_SAT, not white_absent, not black_absent)
            return
        result = seeded_result(behaviour, request.game_id)
        termination = common.TERMINATION_DRAW_AGREED if result == common.GAME_RESULT_DRAW else (
            common.TERMINATION_RESIGNATION)
        scored = result_of_finish(GAME_RESULT[result], TERMINATION[termination], white_sat=True, black_sat=True,
                                  tournament_rated=rated)
        self._decide(log, request, scored, "finished")
        await self._finish(request, result, termination, True, True)

    def _decide(self, log: TournamentLog, request: ev.GameRequested, scored: ScoredResult, source: str) -> None:
        if request.game_id not in log.decided:
            log.decided[request.game_id] = Decided(
                PlayedGame(request.competition.round, request.white_id, request.black_id, scored.score.white_points,
                           scored.score.black_points, scored.kind, request.game_in_pairing),
                source,
            )
            asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _finish(self, request: ev.GameRequested, result: int, termination: int, white_sat: bool,
                      black_sat: bool) -> None:
        await self.publish(ev.GameFinished(
            game_id=request.game_id, competition=request.competition, variant=request.variant, speed=request.speed,
            white_id=request.white_id, black_id=request.black_id, result=result, termination=termination,
            white_sat=white_sat, black_sat=black_sat, rated=request.rated, plies=40,
            finished_at=timestamp(datetime.now(UTC)),
        ))


def seeded_result(behaviour: Behaviour, game_id: str) -> int:
    """The result this play site reports for a game: a function of the seed and the game id only."""
    rng = random.Random(f"{behaviour.seed}:{game_id}")
    return rng.choices(
        (common.GAME_RESULT_WHITE_WINS, common.GAME_RESULT_DRAW, common.GAME_RESULT_BLACK_WINS),
        weights=behaviour.weights,
    )[0]


def _game_of(event: ev.GameFinished, round_number: int) -> PlayedGame[str]:
    """The rules core's record of a result the pairing service decided itself (T-15, T-18)."""
    leg = int(event.game_id.rsplit("-g", 1)[1])
    scored = result_of_finish(GAME_RESULT[event.result], TERMINATION.get(event.termination),
                              white_sat=event.white_sat, black_sat=event.black_sat, tournament_rated=event.rated)
    return PlayedGame(round_number, event.white_id, event.black_id, scored.score.white_points,
                      scored.score.black_points, scored.kind, leg)


def expected_standings(log: TournamentLog, seats: Iterable[Entrant]) -> tuple[StandingRow, ...]:
    """The standings the rules core computes from the games this play site saw decided, and the byes."""
    assert log.started is not None
    fmt = Format(log.started.format)
    byes = [
        Bye(number, paired.bye_id, round_bye_points(log.started.games_per_pairing))
        for number, paired in sorted(log.rounds.items()) if paired.bye_id
    ]
    return final_standings(fmt, seats, [d.game for d in log.decided.values()], byes)


class ClockStandIn(clock_pb2_grpc.ClockServiceServicer):
    """The clock service's GetClock, as far as pairing asks it (who sat, T-15 and R-3).

    Moves per side come from a dict (game id -> (white moves, black moves)); a game it was not told
    about is NOT_FOUND, as for a clock service that never heard of it: nobody sat. Synchronous, so
    that a plain grpc.server in a thread serves it beside a package's system as well.
    """

    def __init__(self) -> None:
        self.moves: dict[str, tuple[int, int]] = {}
        self.asked: list[str] = []

    def GetClock(self, request, context):
        self.asked.append(request.game_id)
        if request.game_id not in self.moves:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no clock for game {request.game_id}")
        white, black = self.moves[request.game_id]
        return clock_pb2.Clock(game_id=request.game_id, kind=clock_pb2.CLOCK_KIND_FISCHER,
                               white=clock_pb2.SideClock(moves_made=white, sat=white > 0),
                               black=clock_pb2.SideClock(moves_made=black, sat=black > 0))
