"""The scheduler: each tournament moves from its start time to its final standings (T-2..T-20, O-10, O-11).

Every step reads the stored state, asks the pure rules (`arbiter.competition.tournament_flow`)
what comes next, and hands the step to the part that takes it: the start here, a round to
`rounds`, the finish to `closing`. Each commits its step and its events in one transaction that
re-checks the state under the tournament's row lock, so a step that crashes before its commit is
simply taken again and a committed one is never taken twice. Stored timers wake the scheduler at
the start time and at the close; a periodic scan of the stored state is the safety net after a
crash.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import asyncpg

from arbiter.competition.records import Entrant
from arbiter.competition.tournament_flow import (
    NextStep,
    berger_numbers,
    decide_start,
    initial_ranks,
    next_step,
)
from arbiter.competition.types import Format
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import Connection, present
from arbiter.kit.errors import Unavailable
from arbiter.kit.outbox import Outbox
from arbiter.kit.pause import pause
from arbiter.kit.ratings import RatingsClient
from arbiter.kit.timers import Timer
from arbiter.kit.timesource import TimeSource
from arbiter.kit.watch import Foreground
from arbiter.rating import DEFAULT_RATING
from services.pairing import store
from services.pairing.closing import Closing, cancel_tournament
from services.pairing.convert import SPEED_TO_PROTO
from services.pairing.metrics import PairingMetrics
from services.pairing.rounds import Rounds
from services.pairing.settings import PairingSettings
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)

# A tournament never needs more steps than this in one go (start, every round, finish).
_MAX_STEPS = 64
# Tournaments one worker takes from the queue at once (their due rounds are paired and saved together).
_BATCH = 32
# The by-state gauge counts every tournament; once in a while is enough for a dashboard.
_COUNT_EVERY_SECONDS = 10.0


def _running_step(row: Any, now: Any) -> NextStep | None:
    """The next step of a running tournament (T-9, T-15); None when it does not run (no plan, or over)."""
    if row["state"] != "running":
        return None
    return next_step(row["current_round"], row["rounds"], row["open_games"], now, row["closes_at"])


class Scheduler:
    """Starts tournaments and sends each due step to rounds or closing; one step at a time per tournament."""

    def __init__(
        self, pool: asyncpg.Pool, outbox: Outbox, time_source: TimeSource, ratings: RatingsClient,
        rounds: Rounds, closing: Closing, hub: WatchHub, metrics: PairingMetrics, settings: PairingSettings,
        foreground: Foreground | None = None,
    ) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.ratings = ratings
        self.rounds = rounds
        self.closing = closing
        self.hub = hub
        self.metrics = metrics
        self.settings = settings
        # Rounds being paired are work Watch streams give way to (players wait for them).
        self.foreground = foreground or Foreground()
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

    async def on_timer(self, connection: Connection, timer: Timer) -> None:
        """Start and close timers only wake the scheduler: the stored state says what is due."""
        self.poke(timer.payload["tournament_id"])

    async def run(self, stop: asyncio.Event) -> None:
        """Work the queue and rescan the stored state until `stop` is set."""
        workers = [asyncio.create_task(self._work()) for _ in range(self.settings.pairing_concurrency)]
        counted_at = 0.0
        try:
            while not stop.is_set():
                try:
                    for tournament_id in await store.due_work(self.pool, self.time_source.now()):
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
            # Everything already waiting goes in one go: tournaments whose rounds ended together
            # are paired in one transaction (see Rounds.pair_rounds).
            while len(woken) < _BATCH and not self._queue.empty():
                woken.append(self._queue.get_nowait())
            now = time.monotonic()
            for tournament_id in woken:
                self.metrics.step_wait.labels(self.metrics.service).observe(now - self._queued.pop(tournament_id))
            with self.foreground.at_work():
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
        """Pair together those among these whose next round is due; return the ids of the others."""
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
            now = self.time_source.now()
            rows: list[Any] = []
            seats: dict[str, list[Entrant]] = {}
            if held:
                # Side by side: most of these are tournaments whose next round is due, and they need their seats.
                rows, seats = await asyncio.gather(store.tournaments_and_open_games(self.pool, held),
                                                   store.seats_of(self.pool, held))
            for row in rows:
                step = _running_step(row, now)
                if step is None:
                    rest.append(row["id"])  # start, cancel: the usual steps (no plan, no rounds yet)
                elif step is NextStep.PAIR:
                    ready.append(row)
                elif step is not NextStep.WAIT:
                    rest.append(row["id"])  # the finish
            if ready:
                rest += await self.rounds.pair_rounds(ready, seats)
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
        now = self.time_source.now()
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
        step = _running_step(row, now)
        if step is None or step is NextStep.WAIT:
            return False
        if step is NextStep.FINISH:
            await self.closing.finish(tournament_id)
            return False
        return row["id"] in await self.rounds.pair_rounds([row])

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
                locked = present(await store.tournament(connection, tournament_id, lock=True), tournament_id)
                if locked["state"] != "starting":
                    return True
                await cancel_tournament(connection, self.outbox, locked, decision.cancel_reason,
                                        self.time_source.now())
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
            locked = present(await store.tournament(connection, tournament_id, lock=True), tournament_id)
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
                tournament_id, plan.format.value, plan.rounds, plan.games_per_pairing, self.time_source.now(),
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
