"""Results in: game.finished, clock.flagged and game.abandoned; game.started for the busy registry (T-15..T-19).

The first result to arrive for a game decides it, whichever of the three topics carried it, so
a round moves on as soon as the clock flags; any later one is counted as "already scored" and
ignored, never applied twice. One exception: the play site hosts the game, so its GameFinished
is the final word. When it differs from a flag's or an abandonment's result already recorded
(after a broker outage the clock can flag a player whose moves it had not yet received), it
replaces that result while the tournament runs, and is counted as "corrected"; standings follow,
and the rating service, which rates GameFinished, agrees with them. A result for a
game this service never requested is counted as "unknown_game". A result the rules cannot
read (no winner in a never-sat game, a loser who is not a player) is counted as "invalid" and
skipped, so one bad event never blocks a partition.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import asyncpg

from arbiter.competition.tournament_flow import (
    FlowError,
    ScoredResult,
    result_of_abandon,
    result_of_finish,
    result_of_flag,
)
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.convert import GAME_RESULT, TERMINATION, termination_name
from arbiter.kit.db import Connection
from arbiter.kit.events import datetime_of
from arbiter.kit.idempotency import delivery_id
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side
from services.pairing import store
from services.pairing.busy import BusyRegistry, game_seats
from services.pairing.convert import game_record
from services.pairing.metrics import PairingMetrics
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)
CONSUMER: Final = "pairing"
# The ids this service gives round games (see tournament_flow.game_id): an unknown one is worth counting.
_OUR_GAME_ID: Final = re.compile(r"^t_[0-9a-z]+-r\d+-b\d+-g[12]$")

Decide = Callable[[Any], tuple[ScoredResult, str]]


@dataclass(frozen=True)
class IncomingResult:
    """One event that may decide a round game: which game, which event, and how to score it."""

    game_id: str
    event_id: str
    source: str
    producer: str
    decide: Decide
    claims_tournament: bool
    # Whether on_finished already freed both players in the busy registry (T-18).
    players_freed: bool = False


def _event_id(event: ev.GameFinished | ev.ClockFlagged | ev.GameAbandoned, source: str) -> str:
    """The id a result is deduplicated under (kit: its own, else one of its game and topic)."""
    return delivery_id(event.meta.event_id, event.game_id, source)


def from_finished(event: ev.GameFinished) -> IncomingResult:
    """The play site's final word (T-16..T-19 endings included)."""
    def decide(row: Any) -> tuple[ScoredResult, str]:
        result = GAME_RESULT.get(event.result)
        if result is None:
            raise FlowError(f"game {event.game_id} finished without a result")
        scored = result_of_finish(
            result, TERMINATION.get(event.termination), white_sat=event.white_sat, black_sat=event.black_sat,
            tournament_rated=row["rated"],
        )
        return scored, termination_name(event.termination)

    return IncomingResult(event.game_id, _event_id(event, events.GAME_FINISHED.name), events.GAME_FINISHED.name,
                          event.meta.producer, decide, event.competition.kind == common.COMPETITION_KIND_TOURNAMENT,
                          players_freed=bool(event.white_id and event.black_id))


def from_flag(event: ev.ClockFlagged) -> IncomingResult:
    """The clock service's flag: on time, disconnection, or never sat (T-16, T-17, R-3)."""
    def decide(row: Any) -> tuple[ScoredResult, str]:
        if event.loser_id == row["white_id"]:
            loser = Side.WHITE
        elif event.loser_id == row["black_id"]:
            loser = Side.BLACK
        else:
            raise FlowError(f"{event.loser_id} flagged in game {event.game_id}, which they do not play")
        scored = result_of_flag(loser, loser_never_sat=event.loser_never_sat, tournament_rated=row["rated"])
        termination = common.TERMINATION_NEVER_SAT if event.loser_never_sat else event.reason or common.TERMINATION_TIME
        return scored, termination_name(termination)

    return IncomingResult(event.game_id, _event_id(event, events.CLOCK_FLAGGED.name), events.CLOCK_FLAGGED.name,
                          event.meta.producer, decide, False)


def from_abandon(event: ev.GameAbandoned) -> IncomingResult:
    """Neither player ever sat: 0-0 (T-19)."""
    def decide(row: Any) -> tuple[ScoredResult, str]:
        return result_of_abandon(tournament_rated=row["rated"]), termination_name(common.TERMINATION_BOTH_ABSENT)

    return IncomingResult(event.game_id, _event_id(event, events.GAME_ABANDONED.name), events.GAME_ABANDONED.name,
                          event.meta.producer, decide, False)


class ResultDesk:
    """Applies results to round games and tells the scheduler which tournaments to look at."""

    def __init__(self, pool: asyncpg.Pool, time_source: TimeSource, busy: BusyRegistry, hub: WatchHub,
                 metrics: PairingMetrics, poke: Callable[[str], None], service: str,
                 alone: Callable[[], bool]) -> None:
        self.pool = pool
        # Whether no other replica can be applying results now (this one consumes every partition).
        self.alone = alone
        self.time_source = time_source
        self.busy = busy
        self.hub = hub
        self.metrics = metrics
        self.poke = poke
        self.service = service

    async def on_started(self, batch: list[ev.GameStarted]) -> str:
        """Both players of any game of the site are now playing (T-18)."""
        await self.busy.started(game_seats(batch))
        return "handled"

    async def on_finished(self, batch: list[ev.GameFinished]) -> str:
        """Free both players of any game (before the next round is looked at); score ours."""
        # Redis frees the players while PostgreSQL scores the games: apply waits for it before waking anyone.
        freeing = asyncio.ensure_future(self.busy.finished(game_seats(batch)))
        try:
            mine = [e for e in batch if e.competition.kind in (common.COMPETITION_KIND_TOURNAMENT,
                                                               common.COMPETITION_KIND_UNSPECIFIED)]
            now = self.time_source.now()
            age = self.metrics.result_age.labels(self.metrics.service)
            for event in mine:
                # A stamp no date can hold says nothing about the delay; the result still counts.
                if event.meta.HasField("occurred_at") and (published := datetime_of(event.meta.occurred_at)):
                    age.observe(max(0.0, self.time_source.real_seconds((now - published).total_seconds())))
            outcome = await self.apply([from_finished(e) for e in mine], before_waking=freeing)
        except BaseException:
            await asyncio.gather(freeing, return_exceptions=True)
            raise
        await freeing
        return outcome

    async def on_flagged(self, batch: list[ev.ClockFlagged]) -> str:
        """Flags decide our games when they come first."""
        return await self.apply([from_flag(e) for e in batch])

    async def on_abandoned(self, batch: list[ev.GameAbandoned]) -> str:
        """Double absences decide our games when they come first (T-19)."""
        return await self.apply([from_abandon(e) for e in batch])

    async def apply(self, incoming: Sequence[IncomingResult], before_waking: Awaitable[None] | None = None) -> str:
        """Apply the first result of each game, in arrival order; count the rest; never apply one twice.

        Two round trips to PostgreSQL whatever the batch: one read (our games), one statement that
        records the events and, of a game's results whose events it records first, applies the
        first final word, else the first result (a redelivered event is recorded already: it
        changes nothing and stands in no new event's way). `before_waking` is awaited before any
        tournament is woken.
        """
        if not incoming:
            return "ignored"
        async with self.pool.acquire() as connection:
            known = await store.our_games(connection, [item.game_id for item in incoming])
            ignored: Counter[str] = Counter()
            for item in incoming:
                if item.game_id not in known and (item.claims_tournament or _OUR_GAME_ID.match(item.game_id)):
                    ignored["unknown_game"] += 1
            ours = [i for i in incoming if i.game_id in known]
            repeated = 0
            in_batch: dict[str, None] = {}
            invalid: list[tuple[IncomingResult, str]] = []
            # Every result of the batch in arrival order, keyed by the decision it would record.
            results: dict[str, tuple[IncomingResult, store.ResultRow]] = {}
            for item in ours:
                if item.event_id in in_batch:
                    repeated += 1
                    continue
                in_batch[item.event_id] = None
                if item.producer == self.service:
                    continue  # our own forfeit or closing draw coming back
                try:
                    scored, termination = item.decide(known[item.game_id])
                except ValueError as error:
                    invalid.append((item, str(error)))
                    continue
                decision = f"{item.source}:{item.event_id}"
                results[decision] = (item, store.ResultRow(
                    item.game_id, scored.kind.value, scored.result.value, termination,
                    scored.score.white_points, scored.score.black_points, scored.score.rated, decision,
                ))
            done = store.AppliedResults({}, {}, [], frozenset())
            complete: list[str] = []
            if in_batch:
                done = await store.apply_results(connection, CONSUMER, list(in_batch), [
                    store.ResultToApply(row, item.event_id, item.source == events.GAME_FINISHED.name)
                    for item, row in results.values()
                ], self.time_source.now())
                complete = list(done.complete)
                unsure = {row["tournament_id"] for row in done.scored.values()}.difference(complete)
                if unsure and not self.alone():
                    # Another replica may have scored a round's other last games at the same time: each
                    # statement saw the other's as open. Looked at again once committed, the later of the
                    # two sees both, so the round moves on now rather than at the next scan.
                    complete += await self._completed_meanwhile(connection, sorted(unsure))
        # A redelivered event counts as a duplicate whatever it carries; a new one that applied
        # nothing was invalid or came after its game's result.
        duplicates = repeated + sum(1 for event_id in in_batch if event_id not in done.recorded)
        for item, problem in invalid:
            if item.event_id in done.recorded:
                ignored["invalid"] += 1
                log.warning("result ignored", extra={"game_id": item.game_id, "source": item.source,
                                                     "error": problem})
        applied: list[tuple[IncomingResult, store.Row]] = []
        for row in done.scored.values():
            applied.append((results[row["decided_by"]][0], row))
        for game_id, row in done.corrected.items():
            item = results[row["decided_by"]][0]
            applied.append((item, row))
            self.metrics.results_corrected.labels(self.service, item.source).inc()
            log.warning("provisional result replaced by the play site's", extra={"game_id": game_id})
        # Every result applied is one of those recorded now: the rest of them came after their game's.
        late = sum(1 for item, _ in results.values() if item.event_id in done.recorded) - len(applied)
        if late:
            ignored["already_scored"] += late
        service = self.metrics.service
        for reason, count in ignored.items():
            self.metrics.results_ignored.labels(service, reason).inc(count)
        for source, count in Counter(item.source for item, _ in applied).items():
            self.metrics.results_applied.labels(service, source).inc(count)
        # Whatever decided the game, its players are free of it (and a late game.started cannot re-add them);
        # on_finished frees those of the play site's own GameFinished.
        still_busy = {i.game_id for i in ours if not i.players_freed}
        if still_busy:
            await self.busy.finished([
                (game_id, known[game_id]["white_id"], known[game_id]["black_id"]) for game_id in still_busy
            ])
        if before_waking is not None:
            await before_waking
        # The next round first; watchers can wait a round trip.
        for tournament_id in complete:
            self.poke(tournament_id)
        await self._announce(applied)
        if applied:
            return "handled"
        return "duplicate" if ours and duplicates == len(ours) else "ignored"

    async def _completed_meanwhile(self, connection: Connection, tournament_ids: list[str]) -> list[str]:
        """The tournaments among `tournament_ids` without an open game now; none if that cannot be read.

        The results are committed already: a failure here must not make the batch come again, which
        would find every event recorded and announce nothing. The reconcile scan still finds the round.
        """
        try:
            raced = await store.without_open_games(connection, tournament_ids)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            log.warning("could not look at the rounds again; the scan will", extra={"error": repr(error)})
            return []
        if raced:
            log.info("rounds completed by results applied here and elsewhere at once",
                     extra={"tournament_ids": raced})
        return raced

    async def _announce(self, applied: Sequence[tuple[IncomingResult, store.Row]]) -> None:
        """Tell watchers."""
        if not applied:
            return
        await self.hub.publish_results([(row["tournament_id"], game_record(row)) for _, row in applied])
