"""The scheduler: each tournament moves from its start time to its final standings (T-2..T-20, O-10, O-11).

Every step reads the stored state, asks the pure rules (`arbiter.competition.tournament_flow`)
what comes next, and commits the step and its events in one transaction that re-checks the
state under the tournament's row lock. A step that crashes before its commit is simply taken
again (the pairing is deterministic, the opening draw idempotent); a committed step is never
taken twice, so no game is ever requested twice (lichess issue #12147). Stored timers wake the
scheduler at the start time and at the close; a periodic scan of the stored state is the safety
net after a crash.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg

from arbiter.competition.standings import why_above
from arbiter.competition.tournament_flow import (
    NextStep,
    PairingError,
    PlannedGame,
    RoundDraw,
    ScoredResult,
    Seat,
    berger_numbers,
    busy_forfeit,
    closing_deadline,
    closing_draw,
    decide_start,
    final_standings,
    initial_ranks,
    next_step,
    pair_round,
    pairing_reads_history,
    round_bye_points,
)
from arbiter.competition.types import Format, OpeningMode
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.creators import release_creator_slot
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.pause import pause
from arbiter.kit.timers import Timer, cancel_timer
from arbiter.kit.timesource import TimeSource
from arbiter.rating import DEFAULT_RATING
from services.pairing import store
from services.pairing.busy import BusyRegistry
from services.pairing.clients import ClockClient, OpeningsClient, RatingsClient, Unavailable
from services.pairing.convert import (
    SPEED_TO_PROTO,
    VERDICT_TO_PROTO,
    game_record,
    standing_row_from_json,
    standing_row_json,
    standing_rows,
)
from services.pairing.metrics import PairingMetrics
from services.pairing.settings import PairingSettings
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)
T = TypeVar("T")

START_TIMER = "tournament_start"
CLOSE_TIMER = "tournament_close"
# A tournament never needs more steps than this in one go (start, every round, finish).
_MAX_STEPS = 64
# Tournaments one worker takes from the queue at once (their round robin rounds are saved together).
_BATCH = 32
# The by-state gauge counts every tournament; once in a while is enough for a dashboard.
_COUNT_EVERY_SECONDS = 10.0


def start_timer_id(tournament_id: str) -> str:
    """The stored timer of a tournament's start time (T-4)."""
    return f"{tournament_id}/start"


def close_timer_id(tournament_id: str) -> str:
    """The stored timer of a tournament's close: the announced end + 10 minutes (T-15)."""
    return f"{tournament_id}/close"


def competition_ref(tournament_id: str, round_number: int) -> common.CompetitionRef:
    """The reference every round game carries."""
    return common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament_id, round=round_number)


def scored_game_finished(row: Any, game: Any, scored: ScoredResult, termination: int, event_id: str,
                         at: Any, *, white_sat: bool, black_sat: bool) -> ev.GameFinished:
    """The GameFinished this service publishes for a result it decides itself (T-15, T-18)."""
    message = ev.GameFinished(
        game_id=game["game_id"], competition=competition_ref(row["id"], game["round"]), variant=row["variant"],
        speed=SPEED_TO_PROTO[row["speed"]], white_id=game["white_id"], black_id=game["black_id"],
        result=VERDICT_TO_PROTO[scored.verdict], termination=termination, white_sat=white_sat, black_sat=black_sat,
        rated=scored.score.rated, finished_at=timestamp(at),
    )
    message.meta.event_id = event_id
    return message


async def cancel_tournament(connection: asyncpg.Connection, outbox: Outbox, row: Any, reason: str, now: Any) -> None:
    """Cancel in the caller's transaction (row locked): state, timers, the creator's slot (A-2), the event."""
    tournament_id = row["id"]
    await connection.execute(
        "UPDATE tournaments SET state = 'cancelled', cancel_reason = $2, finished_at = $3 WHERE id = $1",
        tournament_id, reason, now,
    )
    await cancel_timer(connection, start_timer_id(tournament_id))
    await cancel_timer(connection, close_timer_id(tournament_id))
    await release_creator_slot(connection, row["creator_id"], tournament_id)
    event = ev.TournamentCancelled(tournament_id=tournament_id, reason=reason)
    event.meta.event_id = f"{tournament_id}/cancelled"
    await outbox.add(connection, event)


async def standings_now(db: store.Executor, row: Any) -> tuple[list[ev.StandingRow], list[str]]:
    """The standings as they stand (final ones once finished), with a sentence per place (T-21, T-22)."""
    if row["final_standings"] is not None:
        saved = row["final_standings"]
        return [standing_row_from_json(r) for r in saved["rows"]], list(saved["explanations"])
    tournament_id = row["id"]
    if row["format"] is None:
        # Before the start nobody has a number yet: everyone on 0, by name.
        players = await store.entrant_ids(db, tournament_id)
        return [ev.StandingRow(rank=i, player_id=p) for i, p in enumerate(players, start=1)], []
    fmt = Format(row["format"])
    rows = final_standings(
        fmt, await store.seats(db, tournament_id), await store.played_games(db, tournament_id),
        await store.byes(db, tournament_id),
    )
    explanations = [why_above(fmt, rows, upper.entrant, lower.entrant) for upper, lower in zip(rows, rows[1:])]
    return standing_rows(rows, fmt), explanations


@dataclass(frozen=True)
class RoundToSave:
    """A paired round ready to be saved: its tournament row, draw, games, forfeits and opening."""

    row: Any
    draw: RoundDraw
    planned: Sequence[PlannedGame]
    forfeits: dict[str, ScoredResult | None]
    opening: common.Opening


def _forfeits(row: Any, planned: Sequence[PlannedGame], busy: set[str]) -> dict[str, ScoredResult | None]:
    """Each game's T-18 forfeit when a player is busy in another game, else None."""
    return {game.game_id: busy_forfeit(game.white in busy, game.black in busy, tournament_rated=row["rated"])
            for game in planned}


def _running_step(row: Any, now: Any) -> NextStep | None:
    """The next step of a running tournament (T-9, T-15); None when it does not run (no plan, or over)."""
    if row["state"] != "running":
        return None
    return next_step(row["current_round"], row["rounds"], row["open_games"], now, row["closes_at"])


def _still_due(locked: Any, round_number: int, now: Any) -> bool:
    """Under the row lock: the round is still the next one, the tournament runs, none open, not closed (T-15)."""
    return (locked is not None and locked["state"] == "running" and locked["current_round"] == round_number - 1
            and now < locked["closes_at"] and not locked["open_games"])


class Director:
    """Starts, pairs, closes and finishes tournaments; one tournament at a time per replica."""

    def __init__(
        self, pool: asyncpg.Pool, outbox: Outbox, clock: TimeSource, openings: OpeningsClient,
        ratings: RatingsClient, clocks: ClockClient, busy: BusyRegistry, hub: WatchHub, metrics: PairingMetrics,
        settings: PairingSettings, executor: Executor | None = None,
    ) -> None:
        self.pool = pool
        self.outbox = outbox
        self.clock = clock
        self.openings = openings
        self.ratings = ratings
        self.clocks = clocks
        self.busy = busy
        self.hub = hub
        self.metrics = metrics
        self.settings = settings
        self.executor = executor
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        # Tournament id -> when it was woken (monotonic): how long the step waited for a worker.
        self._queued: dict[str, float] = {}
        # One step at a time per tournament in this replica: lock and how many wait for it.
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    # -- waking up -------------------------------------------------------------------------------

    def poke(self, tournament_id: str) -> None:
        """Ask for a look at this tournament soon (a result arrived, a timer fired)."""
        if tournament_id not in self._queued:
            self._queued[tournament_id] = time.monotonic()
            self._queue.put_nowait(tournament_id)

    async def on_timer(self, connection: asyncpg.Connection, timer: Timer) -> None:
        """Start and close timers only wake the scheduler: the stored state says what is due."""
        self.poke(timer.payload["tournament_id"])

    async def run(self, stop: asyncio.Event) -> None:
        """Work the queue and rescan the stored state until `stop` is set."""
        workers = [asyncio.create_task(self._work()) for _ in range(self.settings.pairing_concurrency)]
        counted_at = 0.0
        try:
            while not stop.is_set():
                try:
                    for tournament_id in await store.due_work(self.pool, self.clock.now()):
                        # One a worker is on now is looked at again by that worker if need be; a poke
                        # would only send a second worker to wait for its lock and find nothing due.
                        if tournament_id not in self._locks:
                            self.poke(tournament_id)
                    if time.monotonic() - counted_at >= _COUNT_EVERY_SECONDS:
                        self.metrics.set_states(await store.counts_by_state(self.pool))
                        counted_at = time.monotonic()
                except (OSError, asyncpg.PostgresError) as error:
                    log.warning("scan failed, retrying", extra={"error": repr(error)})
                await pause(stop, self.settings.reconcile_seconds)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            woken = [await self._queue.get()]
            # Everything already waiting goes in one go: round robins whose rounds ended together
            # are paired in one transaction (see pair_round_robins).
            while len(woken) < _BATCH and not self._queue.empty():
                woken.append(self._queue.get_nowait())
            now = time.monotonic()
            for tournament_id in woken:
                self.metrics.step_wait.labels(self.metrics.service).observe(now - self._queued.pop(tournament_id))
            try:
                rest = await self._advance_together(woken)
            except Exception as error:
                # Each one on its own then, where its own failure is reported.
                log.warning("batch step failed; the tournaments are taken one by one",
                            extra={"tournaments": len(woken), "error": repr(error)})
                rest = woken
            for tournament_id in rest:
                await self._advance_reporting(tournament_id)

    async def _advance_reporting(self, tournament_id: str) -> None:
        try:
            await self.advance(tournament_id)
        except Unavailable as error:
            self.metrics.advance_errors.labels(self.metrics.service, "unavailable").inc()
            log.warning("tournament step waits for another service", extra={
                "tournament_id": tournament_id, "error": error.message})
        except Exception:
            self.metrics.advance_errors.labels(self.metrics.service, "error").inc()
            log.exception("tournament step failed; it is retried", extra={"tournament_id": tournament_id})

    # -- the state machine -----------------------------------------------------------------------

    def _enter(self, tournament_id: str) -> asyncio.Lock:
        lock, users = self._locks.get(tournament_id, (asyncio.Lock(), 0))
        self._locks[tournament_id] = (lock, users + 1)
        return lock

    def _leave(self, tournament_id: str) -> None:
        lock, users = self._locks[tournament_id]
        if users == 1:
            del self._locks[tournament_id]
        else:
            self._locks[tournament_id] = (lock, users - 1)

    async def advance(self, tournament_id: str) -> None:
        """Take every step that is due for this tournament now (idempotent)."""
        lock = self._enter(tournament_id)
        try:
            async with lock:
                for _ in range(_MAX_STEPS):
                    if not await self._step(tournament_id):
                        return
        finally:
            self._leave(tournament_id)

    async def _advance_together(self, tournament_ids: Sequence[str]) -> list[str]:
        """Pair together the round robins among these whose next round is due; return the others' ids."""
        held: list[str] = []
        rest: list[str] = []
        try:
            for tournament_id in tournament_ids:
                lock = self._enter(tournament_id)
                if lock.locked():  # another worker is on it: it goes the usual way, after that one
                    self._leave(tournament_id)
                    rest.append(tournament_id)
                    continue
                await lock.acquire()  # free, so this returns at once
                held.append(tournament_id)
            ready = []
            now = self.clock.now()
            rows: list[Any] = []
            seats: dict[str, list[Seat]] = {}
            if held:
                # Side by side: most of these are round robins whose next round is due, and they need their seats.
                rows, seats = await asyncio.gather(store.tournaments_and_open_games(self.pool, held),
                                                   store.seats_of(self.pool, held))
            for row in rows:
                step = _running_step(row, now)
                if step is None:
                    rest.append(row["id"])  # start, cancel: the usual steps (no plan, no rounds yet)
                elif step is NextStep.PAIR and not pairing_reads_history(Format(row["format"])):
                    ready.append(row)
                elif step is not NextStep.WAIT:
                    rest.append(row["id"])  # a Swiss round, or the finish
            if ready:
                rest += await self.pair_round_robins(ready, seats)
            return rest
        finally:
            for tournament_id in held:
                self._locks[tournament_id][0].release()
                self._leave(tournament_id)

    async def _step(self, tournament_id: str) -> bool:
        """Take the next due step; False when nothing is due."""
        row = await store.tournament_and_open_games(self.pool, tournament_id)
        if row is None:
            return False
        now = self.clock.now()
        state = row["state"]
        if state == "scheduled":
            if now < row["starts_at"]:
                return False
            # T-6: registration closes when the start time comes.
            await self.pool.execute(
                "UPDATE tournaments SET state = 'starting' WHERE id = $1 AND state = 'scheduled'", tournament_id
            )
            return True
        if state == "starting":
            return await self._start(row)
        if state != "running":
            return False
        step = next_step(row["current_round"], row["rounds"], row["open_games"], now, row["closes_at"])
        if step is NextStep.WAIT:
            return False
        if step is NextStep.FINISH:
            await self.finish(tournament_id)
            return False
        if pairing_reads_history(Format(row["format"])):
            return await self._pair_swiss(row, row["current_round"] + 1)
        return row["id"] in await self.pair_round_robins([row])

    async def _start(self, row: Any) -> bool:
        """Count the entrants: cancel below the minimum (T-3), else fix the plan and the numbers (T-2, T-9..T-14)."""
        tournament_id = row["id"]
        players = await store.entrant_ids(self.pool, tournament_id)
        decision = decide_start(
            len(players), row["minimum_entrants"], row["threshold"],
            extra_round=row["extra_round"], home_and_away=row["home_and_away"],
        )
        if decision.cancel_reason is not None:
            async with self.pool.acquire() as connection, connection.transaction():
                locked = await store.tournament(connection, tournament_id, lock=True)
                if locked["state"] != "starting":
                    return True
                await cancel_tournament(connection, self.outbox, locked, decision.cancel_reason, self.clock.now())
            log.info("tournament cancelled at its start", extra={"tournament_id": tournament_id,
                                                                   "reason": decision.cancel_reason})
            await self.hub.publish(tournament_id, "cancelled")
            return False
        plan = decision.plan
        assert plan is not None
        ratings = await self._ratings_at_start(row, players)
        ranks = initial_ranks(ratings)
        numbers = berger_numbers(players, tournament_id)
        order = sorted(players, key=(numbers if plan.format is Format.ROUND_ROBIN else ranks).__getitem__)
        async with self.pool.acquire() as connection, connection.transaction():
            locked = await store.tournament(connection, tournament_id, lock=True)
            if locked["state"] != "starting":
                return True
            await connection.executemany(
                "UPDATE entrants SET rating = $3, initial_rank = $4, berger_number = $5"
                " WHERE tournament_id = $1 AND player_id = $2",
                [(tournament_id, p, ratings[p], ranks[p], numbers[p]) for p in players],
            )
            await connection.execute(
                "UPDATE tournaments SET state = 'running', format = $2, rounds = $3, games_per_pairing = $4,"
                " started_at = $5, plan_notes = $6 WHERE id = $1",
                tournament_id, plan.format.value, plan.rounds, plan.games_per_pairing, self.clock.now(),
                list(plan.reasons),
            )
            # Entrant ids in number order: Berger numbers (T-14) or initial ranks (T-13).
            event = ev.TournamentStarted(
                tournament_id=tournament_id, format=plan.format.value, rounds=plan.rounds,
                games_per_pairing=plan.games_per_pairing, entrant_ids=order,
            )
            event.meta.event_id = f"{tournament_id}/started"
            await self.outbox.add(connection, event)
        log.info("tournament started", extra={"tournament_id": tournament_id, "format": plan.format.value,
                                              "rounds": plan.rounds, "entrants": len(players)})
        await self.hub.publish(tournament_id, "started")
        return True

    async def _ratings_at_start(self, row: Any, players: Sequence[str]) -> dict[str, float]:
        """Ratings for the variant and speed (T-13 initial ranks); the ones seen at join if the service is down."""
        try:
            return await self.ratings.ratings(players, row["variant"], SPEED_TO_PROTO[row["speed"]])
        except Unavailable as error:
            log.warning("ratings unavailable at the start; ranking by the ratings seen at join, then name",
                        extra={"tournament_id": row["id"], "error": error.message})
        rows = await store.entrant_rows(self.pool, row["id"])
        return {r["player_id"]: r["rating"] if r["rating"] is not None else DEFAULT_RATING for r in rows}

    async def _pair_swiss(self, row: Any, round_number: int) -> bool:
        """Pair a Swiss round and request its games, all in one transaction (T-8, T-12, T-13, T-18, O-10, O-11).

        False when the round is requested and now waits for its results (nothing else is due).
        """
        started = time.perf_counter()
        tournament_id = row["id"]
        fmt = Format(row["format"])
        per_pairing = row["games_per_pairing"]
        # Independent reads side by side: the round transition waits for the slowest, not the sum.
        seats, history, byes = await asyncio.gather(
            store.seats(self.pool, tournament_id), store.played_games(self.pool, tournament_id),
            store.byes(self.pool, tournament_id),
        )
        mode = OpeningMode(row["opening_mode"])
        opening_draw = asyncio.ensure_future(self.openings.draw(
            tournament_id, round_number, row["variant"], mode, row["thematic_opening"],
            # O-10: a Swiss never draws the same table opening twice (a thematic one is always the same, O-9).
            no_repeat=mode.is_table_draw(),
        ))
        try:
            draw = await self._compute(pair_round, fmt, seats, history, byes, round_number, row["rounds"], per_pairing)
        except PairingError as error:
            opening_draw.cancel()
            await asyncio.gather(opening_draw, return_exceptions=True)
            # Like lichess when bbpPairings finds no valid pairing: the tournament ends here.
            await self.finish(tournament_id, note=(
                f"round {round_number} cannot be paired without a rematch or a second bye ({error}); "
                f"the tournament ends after round {round_number - 1} (T-13)"
            ))
            return False
        opening = await opening_draw
        planned = draw.games(tournament_id, per_pairing)
        busy = await self.busy.busy(p for game in planned for p in (game.white, game.black))
        item = RoundToSave(row, draw, planned, _forfeits(row, planned, busy), opening)
        async with self.pool.acquire() as connection, connection.transaction():
            locked = await store.tournament_and_open_games(connection, tournament_id, lock=True)
            now = self.clock.now()
            if not _still_due(locked, round_number, now):
                return True  # another replica or the close got there first; the next step says what is due
            await self.outbox.add(connection, *await self._save_rounds(connection, [item], now))
        return await self._paired(item, fmt, started)

    async def _paired(self, item: RoundToSave, fmt: Format, started: float) -> bool:
        """Count, log and announce a committed round; True when it needs another look (forfeits only)."""
        again = self._count_paired(item, fmt, started)
        await self.hub.publish(item.row["id"], "round_paired", round_number=item.draw.round)
        return again

    def _count_paired(self, item: RoundToSave, fmt: Format, started: float) -> bool:
        """Count and log a committed round; True when it needs another look (forfeits only)."""
        requested = sum(1 for game in item.planned if item.forfeits[game.game_id] is None)
        service = self.metrics.service
        self.metrics.pairing_seconds.labels(service, fmt.value).observe(time.perf_counter() - started)
        self.metrics.games_requested.labels(service).inc(requested)
        self.metrics.busy_forfeits.labels(service).inc(len(item.planned) - requested)
        if item.draw.engine == "fallback":
            self.metrics.pairing_fallbacks.labels(service).inc()
        tournament_id, round_number = item.row["id"], item.draw.round
        log.info("round paired", extra={"tournament_id": tournament_id, "round": round_number,
                                        "games": len(item.planned), "forfeits": len(item.planned) - requested,
                                        "engine": item.draw.engine})
        # A round of forfeits only (T-18) is complete at once: look again; otherwise its results wake us.
        return requested == 0

    async def pair_round_robins(self, rows: Sequence[Any], seats: dict[str, list[Seat]] | None = None) -> list[str]:
        """Pair the next round of one or more round robins in one transaction (T-8, T-14, T-18, O-10, O-11).

        Under load many rounds end at once; one read of their seats, one busy check, one save and
        one outbox insert serve them all. `rows` are tournaments whose next step is PAIR, their
        locks held by the caller; `seats` their seats when the caller has read them. Returns the ids
        that need another look: a round of forfeits only, or a tournament whose state changed before
        the commit.
        """
        started = time.perf_counter()
        ids = [row["id"] for row in rows]
        if seats is None:
            seats = await store.seats_of(self.pool, ids)
        # A Berger table needs no history (T-14) and is a lookup (~0.1 ms): no hop to another thread.
        draws = {row["id"]: pair_round(Format.ROUND_ROBIN, seats[row["id"]], [], [], row["current_round"] + 1,
                                       row["rounds"], row["games_per_pairing"]) for row in rows}
        openings = await asyncio.gather(*(self.openings.draw(
            row["id"], row["current_round"] + 1, row["variant"], OpeningMode(row["opening_mode"]),
            row["thematic_opening"], no_repeat=False) for row in rows))
        planned = {row["id"]: draws[row["id"]].games(row["id"], row["games_per_pairing"]) for row in rows}
        busy = await self.busy.busy(p for games in planned.values() for game in games for p in (game.white, game.black))
        items = {row["id"]: RoundToSave(row, draws[row["id"]], planned[row["id"]],
                                        _forfeits(row, planned[row["id"]], busy), opening)
                 for row, opening in zip(rows, openings, strict=True)}
        async with self.pool.acquire() as connection, connection.transaction():
            now = self.clock.now()
            due = [items[locked["id"]] for locked in await store.tournaments_and_open_games(connection, ids, lock=True)
                   if _still_due(locked, items[locked["id"]].draw.round, now)]
            if due:
                await self.outbox.add(connection, *await self._save_rounds(connection, due, now))
        again = [tournament_id for tournament_id in ids if tournament_id not in {item.row["id"] for item in due}]
        again += [item.row["id"] for item in due if self._count_paired(item, Format.ROUND_ROBIN, started)]
        # One round trip tells the watchers of every round: a publish each cost a round trip per tournament.
        await self.hub.publish_changes([(item.row["id"], "round_paired", item.draw.round) for item in due])
        return again

    async def _save_rounds(self, connection: asyncpg.Connection, rounds: Sequence[RoundToSave], now: Any) -> list[Any]:
        """Insert the rounds and their games; return their events: RoundPaired, GameRequested, busy GameFinished."""
        busy_termination = common.Termination.Name(common.TERMINATION_BUSY_FORFEIT)
        games = [(item, game, item.forfeits[game.game_id]) for item in rounds for game in item.planned]
        await store.save_rounds(connection, [
            store.NewRound(item.row["id"], item.draw.round, item.opening.SerializeToString(), item.draw.bye,
                           round_bye_points(item.row["games_per_pairing"]) if item.draw.bye is not None else 0,
                           item.draw.engine, json.dumps(list(item.draw.notes)))
            for item in rounds
        ], [
            store.NewGame(game, item.row["id"]) if forfeit is None else store.NewGame(
                game, item.row["id"], forfeit.kind.value, forfeit.verdict.value, busy_termination,
                forfeit.score.white_points, forfeit.score.black_points, forfeit.score.rated)
            for item, game, forfeit in games
        ], now)
        return [event for item in rounds for event in self._round_events(item, now)]

    @staticmethod
    def _round_events(item: RoundToSave, now: Any) -> list[Any]:
        """RoundPaired, then each game's GameRequested, or its busy forfeit's GameFinished (T-18)."""
        row, draw, planned, opening = item.row, item.draw, item.planned, item.opening
        tournament_id = row["id"]
        round_number = draw.round
        ref = competition_ref(tournament_id, round_number)
        lines: dict[int, ev.PairingLine] = {}
        for game in planned:
            line = lines.setdefault(game.board, ev.PairingLine(white_id=game.white, black_id=game.black))
            line.game_ids.append(game.game_id)
        paired = ev.RoundPaired(tournament_id=tournament_id, round=round_number, opening=opening,
                                pairings=list(lines.values()), bye_id=draw.bye or "")
        paired.meta.event_id = f"{tournament_id}/r{round_number}/paired"
        events: list[Any] = [paired]
        time_control = common.TimeControl(fischer=common.FischerControl(
            base_seconds=row["base_seconds"], increment_seconds=row["increment_seconds"]))
        # What every request of the round shares, copied into each: building each from keywords cost
        # three times as much (35 ms for the 625 rounds of a whole burst).
        shared = ev.GameRequested(
            competition=ref, variant=row["variant"], time_control=time_control, speed=SPEED_TO_PROTO[row["speed"]],
            rated=row["rated"], opening=opening, requested_at=timestamp(now),
        )
        for game in planned:
            forfeit = item.forfeits[game.game_id]
            if forfeit is None:
                request = ev.GameRequested()
                request.CopyFrom(shared)
                request.game_id, request.white_id, request.black_id = game.game_id, game.white, game.black
                request.game_in_pairing = game.leg
                # Deterministic: a relay that publishes twice after a crash sends the same event.
                request.meta.event_id = f"{game.game_id}/requested"
                events.append(request)
            else:
                # T-18: the game is not opened; the play site and the rating service hear the forfeit.
                game_row = {"game_id": game.game_id, "round": round_number, "white_id": game.white,
                            "black_id": game.black}
                events.append(scored_game_finished(row, game_row, forfeit, common.TERMINATION_BUSY_FORFEIT,
                                                   f"{game.game_id}/forfeit", now, white_sat=False, black_sat=False))
        return events

    async def finish(self, tournament_id: str, note: str = "") -> None:
        """Close the tournament: draw open games past the deadline (T-15), final standings, TournamentFinished."""
        drawn: list[Any] = []
        # Who sat in each game drawn is the clock service's to say: asked before the row is locked.
        sat = await self.clocks.who_sat([g["game_id"] for g in await store.open_game_rows(self.pool, tournament_id)])
        async with self.pool.acquire() as connection, connection.transaction():
            row = await store.tournament(connection, tournament_id, lock=True)
            if row is None or row["state"] != "running":
                return
            now = self.clock.now()
            events: list[Any] = []
            open_rows = await store.open_game_rows(connection, tournament_id)
            if open_rows and now < closing_deadline(row["closes_at"]):
                return  # results are still due; the deadline has not come (T-15)
            unasked = [g["game_id"] for g in open_rows if g["game_id"] not in sat]
            if unasked:
                sat.update(await self.clocks.who_sat(unasked))
            closing = common.Termination.Name(common.TERMINATION_CLOSED_AT_DEADLINE)
            results: list[store.ResultRow] = []
            for game in open_rows:
                white_sat, black_sat = sat[game["game_id"]]
                scored = closing_draw(white_sat=white_sat, black_sat=black_sat, tournament_rated=row["rated"])
                results.append(store.ResultRow(
                    game["game_id"], scored.kind.value, scored.verdict.value, closing, scored.score.white_points,
                    scored.score.black_points, scored.score.rated, "T-15"))
                events.append(scored_game_finished(row, game, scored, common.TERMINATION_CLOSED_AT_DEADLINE,
                                                   f"{game['game_id']}/closed", now, white_sat=white_sat,
                                                   black_sat=black_sat))
                drawn.append(game)
            await store.record_results(connection, results, now)
            if open_rows:
                note = note or (
                    f"closed at the announced end + 10 minutes; {len(open_rows)} open game"
                    f"{'s' if len(open_rows) != 1 else ''} scored as draws (T-15)"
                )
            elif row["current_round"] < row["rounds"] and not note:
                note = (f"the announced duration ended after round {row['current_round']} of {row['rounds']}; "
                        "rounds not yet started are not played (T-15)")
            rows, explanations = await standings_now(connection, row)
            await connection.execute(
                "UPDATE tournaments SET state = 'finished', finished_at = $2, finish_note = $3, final_standings = $4"
                " WHERE id = $1",
                tournament_id, now, note,
                {"rows": [standing_row_json(r) for r in rows], "explanations": explanations},
            )
            await release_creator_slot(connection, row["creator_id"], tournament_id)
            await cancel_timer(connection, close_timer_id(tournament_id))
            finished = ev.TournamentFinished(tournament_id=tournament_id, standings=rows, finished_at=timestamp(now))
            finished.meta.event_id = f"{tournament_id}/finished"
            events.append(finished)
            await self.outbox.add(connection, *events)
        log.info("tournament finished", extra={"tournament_id": tournament_id, "note": note})
        await self.busy.finished([(g["game_id"], g["white_id"], g["black_id"]) for g in drawn])
        if drawn:
            drawn_ids = {g["game_id"] for g in drawn}
            await self.hub.publish_results([
                (tournament_id, game_record(g)) for g in await store.games(self.pool, tournament_id)
                if g["game_id"] in drawn_ids
            ])
        await self.hub.publish(tournament_id, "finished")

    async def _compute(self, function: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound rules (the Swiss engine) off the event loop: in the process pool when there is one."""
        loop = asyncio.get_running_loop()
        if self.executor is not None:
            return await loop.run_in_executor(self.executor, functools.partial(function, *args))
        return await asyncio.to_thread(function, *args)
