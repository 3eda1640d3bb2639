"""The end of a tournament: cancelled at its start or by its creator (T-3, T-4), or closed and finished (T-15).

`Closing.finish` draws the games still open past the deadline, saves the final standings
(T-21, T-22) and announces them, all in one transaction under the tournament's row lock.
"""

from __future__ import annotations

import logging
from itertools import pairwise
from typing import Any

import asyncpg

from arbiter.competition.standings import why_above
from arbiter.competition.tournament_flow import OpenGame, close_tournament, final_standings, may_close
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.creators import release_creator_slot
from arbiter.kit.db import Connection, Executor
from arbiter.kit.events import timestamp
from arbiter.kit.outbox import Outbox
from arbiter.kit.timers import cancel_timer
from arbiter.kit.timesource import TimeSource
from services.pairing import store
from services.pairing.busy import BusyRegistry
from services.pairing.clients import ClockClient
from services.pairing.convert import (
    game_record,
    scored_game_finished,
    standing_row_from_json,
    standing_row_json,
    standing_rows,
)
from services.pairing.timers import close_timer_id, start_timer_id
from services.pairing.watch import WatchHub

log = logging.getLogger(__name__)


async def cancel_tournament(connection: Connection, outbox: Outbox, row: Any, reason: str, now: Any) -> None:
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


async def standings_now(db: Executor, row: Any) -> tuple[list[ev.StandingRow], list[str]]:
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
    explanations = [why_above(fmt, rows, upper.entrant, lower.entrant) for upper, lower in pairwise(rows)]
    return standing_rows(rows, fmt), explanations


class Closing:
    """Finishes tournaments: the T-15 draws of the games still open, the final standings, TournamentFinished."""

    def __init__(self, pool: asyncpg.Pool, outbox: Outbox, time_source: TimeSource, clocks: ClockClient,
                 busy: BusyRegistry, hub: WatchHub) -> None:
        self.pool = pool
        self.outbox = outbox
        self.time_source = time_source
        self.clocks = clocks
        self.busy = busy
        self.hub = hub

    async def finish(self, tournament_id: str, note: str = "") -> None:
        """Close the tournament: draw open games past the deadline (T-15), final standings, TournamentFinished."""
        drawn: list[Any] = []
        # Who sat in each game drawn is the clock service's to say: asked before the row is locked.
        sat = await self.clocks.who_sat([g["game_id"] for g in await store.open_game_rows(self.pool, tournament_id)])
        async with self.pool.acquire() as connection, connection.transaction():
            row = await store.tournament(connection, tournament_id, lock=True)
            if row is None or row["state"] != "running":
                return
            now = self.time_source.now()
            events: list[Any] = []
            open_rows = await store.open_game_rows(connection, tournament_id)
            if not may_close(len(open_rows), now, row["closes_at"]):
                return  # results are still due; the deadline has not come (T-15)
            unasked = [g["game_id"] for g in open_rows if g["game_id"] not in sat]
            if unasked:
                sat.update(await self.clocks.who_sat(unasked))
            decided = close_tournament([OpenGame(g["game_id"], *sat[g["game_id"]]) for g in open_rows],
                                       row["current_round"], row["rounds"], tournament_rated=row["rated"], note=note)
            closing = common.Termination.Name(common.TERMINATION_CLOSED_AT_DEADLINE)
            results: list[store.ResultRow] = []
            for game, (_, scored) in zip(open_rows, decided.draws, strict=True):
                white_sat, black_sat = sat[game["game_id"]]
                results.append(store.ResultRow(
                    game["game_id"], scored.kind.value, scored.result.value, closing, scored.score.white_points,
                    scored.score.black_points, scored.score.rated, "T-15"))
                events.append(scored_game_finished(row, game, scored, common.TERMINATION_CLOSED_AT_DEADLINE,
                                                   f"{game['game_id']}/closed", now, white_sat=white_sat,
                                                   black_sat=black_sat))
                drawn.append(game)
            await store.record_results(connection, results, now)
            note = decided.note
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
