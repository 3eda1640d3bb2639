"""Pairing a round and requesting its games (T-8, T-12..T-14, T-18, O-10, O-11).

A round is paired from the stored state, then saved with its events in one transaction that
re-checks, under the tournament's row lock, that the round is still the one due: a pairing that
crashes before its commit is simply made again (the pairing is deterministic, the opening draw
idempotent); a committed round is never saved twice, so no game is ever requested twice
(lichess issue #12147).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import EngineFault
from arbiter.competition.tournament_flow import (
    NextStep,
    PairingError,
    PlannedGame,
    RoundDraw,
    ScoredResult,
    busy_forfeit,
    next_step,
    pair_round,
    pairing_reads_history,
    round_bye_points,
)
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import Connection
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.openings.modes import OpeningMode
from arbiter.vocabulary import ResultKind
from services.pairing import store
from services.pairing.busy import BusyRegistry
from services.pairing.clients import OpeningsClient
from services.pairing.closing import Closing
from services.pairing.convert import SPEED_TO_PROTO, competition_ref, scored_game_finished
from services.pairing.metrics import PairingMetrics
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)
T = TypeVar("T")


async def _given(value: T) -> T:
    """A value already at hand, as an awaitable beside reads that are not."""
    return value


@dataclass(frozen=True)
class RoundToSave:
    """A paired round ready to be saved: its tournament row, draw, games, forfeits and opening."""

    row: Any
    draw: RoundDraw
    planned: Sequence[PlannedGame]
    forfeits: dict[str, ScoredResult | None]
    opening: common.Opening


def pair_from_rows(fmt: Format, seat_rows: Sequence[tuple[Any, ...]], game_rows: Sequence[tuple[Any, ...]],
                   bye_rows: Sequence[tuple[Any, ...]], round_number: int, rounds: int,
                   games_per_pairing: int) -> RoundDraw:
    """`pair_round` of records sent as plain tuples (`as_rows`), as a worker process receives them.

    A frozen dataclass pickles field by field and an enum by a lookup: the records of a
    200-entrant history cost more to send to a worker and back into objects than plain tuples.
    """
    kinds = {kind.value: kind for kind in ResultKind}
    return pair_round(
        fmt, [Entrant(*row) for row in seat_rows],
        [PlayedGame(number, white, black, white_points, black_points, kinds[kind], leg)
         for number, white, black, white_points, black_points, kind, leg in game_rows],
        [Bye(*row) for row in bye_rows], round_number, rounds, games_per_pairing,
    )


def as_rows(seats: Sequence[Entrant], history: Sequence[PlayedGame[str]],
            byes: Sequence[Bye[str]]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The records `pair_from_rows` takes, as plain tuples."""
    return (
        [(e.player, e.berger_number, e.initial_rank, e.rating) for e in seats],
        [(g.round, g.white, g.black, g.white_points, g.black_points, g.kind.value, g.leg) for g in history],
        [(b.round, b.entrant, b.points) for b in byes],
    )


def engine_loaded() -> None:
    """Nothing: called in a worker process, its import of this module loads the Swiss engine."""


def start_engine_workers(executor: Executor, count: int) -> None:
    """Start the engine's `count` worker processes now, not at the first Swiss round.

    A spawned worker imports the service and the engine before its first task: done on the
    first round, that start-up shares the cores with the round's pairing.
    """
    for _ in range(count):
        executor.submit(engine_loaded)


def busy_forfeits(row: Any, planned: Sequence[PlannedGame], busy: set[str]) -> dict[str, ScoredResult | None]:
    """Each game's T-18 forfeit when a player is busy in another game, else None."""
    return {game.game_id: busy_forfeit(game.white in busy, game.black in busy, tournament_rated=row["rated"])
            for game in planned}


def still_due(locked: Any, round_number: int, now: Any) -> bool:
    """Under the row lock: it runs, the round is still the next one, and the rules still pair it (T-9, T-15)."""
    return (locked is not None and locked["state"] == "running" and locked["current_round"] == round_number - 1
            and next_step(locked["current_round"], locked["rounds"], locked["open_games"], now, locked["closes_at"])
            is NextStep.PAIR)


def round_events(item: RoundToSave, now: Any) -> list[Any]:
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
    # What every request of the round shares, copied from one template into each rather than built
    # from keywords per game (tests/bench/bench_round_save.py).
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


class Rounds:
    """Pairs the next round of Swiss tournaments and round robins, and requests its games."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, time_source: TimeSource, openings: OpeningsClient,
                 busy: BusyRegistry, hub: WatchHub, metrics: PairingMetrics, closing: Closing,
                 executor: Executor | None = None) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.openings = openings
        self.busy = busy
        self.hub = hub
        self.metrics = metrics
        self.closing = closing
        self.executor = executor

    async def pair_rounds(self, rows: Sequence[Any], seats: dict[str, list[Entrant]] | None = None) -> list[str]:
        """Pair the next round of one or more tournaments in one transaction (T-8, T-12..T-14, T-18, O-10, O-11).

        Under load many rounds end at once; one read of their seats, histories and byes, one busy
        check, one save and one outbox insert serve them all, and the Swiss engine pairs them side
        by side off the event loop while their openings are drawn. `rows` are tournaments whose
        next step is PAIR, their locks held by the caller; `seats` their seats when the caller has
        read them. Returns the ids that need another look: a round of forfeits only, or a
        tournament whose state changed before the commit. A Swiss round that cannot be paired ends
        its tournament (T-13).
        """
        started = time.perf_counter()
        ids = [row["id"] for row in rows]
        swiss = [row["id"] for row in rows if pairing_reads_history(Format(row["format"]))]
        seats_by_id, histories, byes = await asyncio.gather(
            _given(seats) if seats is not None else store.seats_of(self.pool, ids),
            store.played_games_of(self.pool, swiss) if swiss else _given({}),
            store.byes_of(self.pool, swiss) if swiss else _given({}),
        )
        draws, openings = await asyncio.gather(
            asyncio.gather(*(self._draw(row, seats_by_id[row["id"]], histories.get(row["id"], []),
                                        byes.get(row["id"], [])) for row in rows)),
            asyncio.gather(*(self._opening(row) for row in rows)),
        )
        paired = [(row, draw, opening) for row, draw, opening in zip(rows, draws, openings, strict=True)
                  if isinstance(draw, RoundDraw)]
        planned = {row["id"]: draw.games(row["id"], row["games_per_pairing"]) for row, draw, _ in paired}
        busy = await self.busy.busy(p for games in planned.values() for game in games for p in (game.white, game.black))
        items = {row["id"]: RoundToSave(row, draw, planned[row["id"]], busy_forfeits(row, planned[row["id"]], busy),
                                        opening)
                 for row, draw, opening in paired}
        due: list[RoundToSave] = []
        if items:
            async with self.pool.acquire() as connection, connection.transaction():
                now = self.time_source.now()
                locked_rows = await store.tournaments_and_open_games(connection, list(items), lock=True)
                due = [items[locked["id"]] for locked in locked_rows
                       if still_due(locked, items[locked["id"]].draw.round, now)]
                if due:
                    await self.outbox.add(connection, *await self._save_rounds(connection, due, now))
        saved = {item.row["id"] for item in due}
        again = [tournament_id for tournament_id in items if tournament_id not in saved]
        again += [item.row["id"] for item in due if self._count_paired(item, started)]
        # One round trip tells the watchers of every round: a publish each cost a round trip per tournament.
        await self.hub.publish_changes([(item.row["id"], "round_paired", item.draw.round) for item in due])
        for row, draw in zip(rows, draws, strict=True):
            if isinstance(draw, PairingError):
                await self._cannot_pair(row, draw)
        return again

    async def _draw(self, row: Any, seats: Sequence[Entrant], history: Sequence[PlayedGame[str]],
                    byes: Sequence[Bye[str]]) -> RoundDraw | PairingError:
        """The next round's draw, or why no pairing complies with the absolute criteria (T-13)."""
        fmt = Format(row["format"])
        plan = (row["current_round"] + 1, row["rounds"], row["games_per_pairing"])
        try:
            if not pairing_reads_history(fmt):
                # A Berger table needs no history (T-14) and is a lookup: no hop to another thread.
                return pair_round(fmt, seats, history, byes, *plan)
            return await self._pair_off_loop(fmt, seats, history, byes, plan)
        except PairingError as error:
            return error

    async def _opening(self, row: Any) -> common.Opening:
        """The opening every board of the next round plays (O-9, O-10, O-11)."""
        mode = OpeningMode(row["opening_mode"])
        return await self.openings.draw(
            row["id"], row["current_round"] + 1, row["variant"], mode, row["thematic_opening"],
            # O-10: a Swiss never draws the same table opening twice (a thematic one is always the same, O-9).
            no_repeat=pairing_reads_history(Format(row["format"])) and mode.is_table_draw(),
        )

    async def _cannot_pair(self, row: Any, error: PairingError) -> None:
        """End the tournament after its last round (T-13), as lichess does when bbpPairings finds no pairing."""
        # A pairing the guard refused (an engine fault) would be refused again: the same history, the same answer.
        tournament_id, round_number = row["id"], row["current_round"] + 1
        service = self.metrics.service
        if isinstance(error, EngineFault):
            self.metrics.engine_faults.labels(service).inc()
            log.error("Swiss pairing refused", extra={"tournament_id": tournament_id, "round": round_number,
                                                      "error": str(error)})
            why = f"the engine failed ({error})"
        else:
            self.metrics.no_valid_pairing.labels(service).inc()
            why = f"no pairing complies with the absolute criteria ({error})"
        await self.closing.finish(tournament_id, note=(
            f"round {round_number} cannot be paired: {why}; the tournament ends after round {round_number - 1} (T-13)"
        ))

    def _count_paired(self, item: RoundToSave, started: float) -> bool:
        """Count and log a committed round; True when it needs another look (forfeits only)."""
        requested = sum(1 for game in item.planned if item.forfeits[game.game_id] is None)
        service = self.metrics.service
        self.metrics.pairing_seconds.labels(service, item.row["format"]).observe(time.perf_counter() - started)
        self.metrics.games_requested.labels(service).inc(requested)
        self.metrics.busy_forfeits.labels(service).inc(len(item.planned) - requested)
        tournament_id, round_number = item.row["id"], item.draw.round
        log.info("round paired", extra={"tournament_id": tournament_id, "round": round_number,
                                        "games": len(item.planned), "forfeits": len(item.planned) - requested,
                                        "engine": item.draw.engine})
        # A round of forfeits only (T-18) is complete at once: look again; otherwise its results wake us.
        return requested == 0

    async def _save_rounds(self, connection: Connection, rounds: Sequence[RoundToSave], now: Any) -> list[Any]:
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
                game, item.row["id"], forfeit.kind.value, forfeit.result.value, busy_termination,
                forfeit.score.white_points, forfeit.score.black_points, forfeit.score.rated)
            for item, game, forfeit in games
        ], now)
        return [event for item in rounds for event in round_events(item, now)]

    async def _pair_off_loop(self, fmt: Format, seats: Sequence[Entrant], history: Sequence[PlayedGame[str]],
                             byes: Sequence[Bye[str]], plan: tuple[int, int, int]) -> RoundDraw:
        """The Swiss engine (CPU-bound) off the event loop: in the process pool when there is one, else a thread."""
        if self.executor is None:
            # A thread shares the records as they are: only a worker process needs them sent as plain tuples.
            return await asyncio.to_thread(pair_round, fmt, seats, history, byes, *plan)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(pair_from_rows, fmt, *as_rows(seats, history, byes), *plan))
