"""SQL of the pairing service: tournaments, entrants, rounds and games in its own schema."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NamedTuple

import asyncpg

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.tournament_flow import PlannedGame
from arbiter.kit.db import Connection, Executor
from arbiter.vocabulary import ResultKind

Row = asyncpg.Record


class NewRound(NamedTuple):
    """A paired round as the round save stores it (T-8, T-14, O-10); fields in the statement's order."""

    tournament_id: str
    round: int
    opening: bytes  # the serialized Opening every board plays
    bye_id: str | None
    bye_points: int
    engine: str
    notes: str  # a JSON array


class NewGame(NamedTuple):
    """A game of a paired round; the result fields are set only for a busy forfeit, scored at once (T-18)."""

    game: PlannedGame
    tournament_id: str
    kind: str | None = None
    result: str | None = None
    termination: str | None = None
    white_points: int | None = None
    black_points: int | None = None
    rated: bool | None = None


async def save_rounds(connection: Connection, rounds: Sequence[NewRound], games: Sequence[NewGame],
                      now: datetime) -> None:
    """Insert rounds, their games and each tournament's current round, under the tournaments' row locks."""
    if not rounds:
        return
    # One statement: one round trip inside the row-locked transaction, whatever the number and size of the rounds.
    await connection.execute(
        """
        WITH new_rounds AS (
            INSERT INTO rounds (tournament_id, round, opening, bye_id, bye_points, engine, notes, paired_at)
            SELECT r.tournament_id, r.round, r.opening, r.bye_id, r.bye_points, r.engine, r.notes::jsonb, $8
            FROM unnest($1::text[], $2::int[], $3::bytea[], $4::text[], $5::int[], $6::text[], $7::text[])
                AS r(tournament_id, round, opening, bye_id, bye_points, engine, notes)
        ), new_games AS (
            INSERT INTO games (game_id, tournament_id, round, board, leg, white_id, black_id, requested,
                               finished, kind, result, termination, white_points, black_points, rated,
                               decided_by, finished_at)
            SELECT g.game_id, g.tournament_id, g.round, g.board, g.leg, g.white_id, g.black_id, g.kind IS NULL,
                   g.kind IS NOT NULL, g.kind, g.result, g.termination, g.white_points, g.black_points, g.rated,
                   CASE WHEN g.kind IS NULL THEN NULL ELSE 'T-18' END,
                   CASE WHEN g.kind IS NULL THEN NULL ELSE $8::timestamptz END
            FROM unnest($9::text[], $10::text[], $11::int[], $12::int[], $13::int[], $14::text[], $15::text[],
                        $16::text[], $17::text[], $18::text[], $19::int[], $20::int[], $21::bool[])
                AS g(game_id, tournament_id, round, board, leg, white_id, black_id, kind, result, termination,
                     white_points, black_points, rated)
        )
        UPDATE tournaments AS t SET current_round = r.round
        FROM unnest($1::text[], $2::int[]) AS r(tournament_id, round) WHERE t.id = r.tournament_id
        """,
        *(list(column) for column in zip(*rounds, strict=True)), now,
        [g.game.game_id for g in games], [g.tournament_id for g in games], [g.game.round for g in games],
        [g.game.board for g in games], [g.game.leg for g in games], [g.game.white for g in games],
        [g.game.black for g in games], [g.kind for g in games], [g.result for g in games],
        [g.termination for g in games], [g.white_points for g in games], [g.black_points for g in games],
        [g.rated for g in games],
    )


async def tournament(db: Executor, tournament_id: str, *, lock: bool = False) -> Row | None:
    """One tournament row; `lock` takes its row lock (inside a transaction) to serialise state changes."""
    return await db.fetchrow(
        "SELECT * FROM tournaments WHERE id = $1" + (" FOR UPDATE" if lock else ""), tournament_id
    )


async def tournament_and_open_games(db: Executor, tournament_id: str, *, lock: bool = False) -> Row | None:
    """One tournament row with `open_games` (games requested and still without a result) in one round trip."""
    rows = await tournaments_and_open_games(db, [tournament_id], lock=lock)
    return rows[0] if rows else None


async def tournaments_and_open_games(db: Executor, tournament_ids: Sequence[str], *, lock: bool = False) -> list[Row]:
    """Tournaments with `open_games`, by id; `lock` takes their row locks in id order (no deadlock)."""
    return await db.fetch(
        "SELECT t.*, (SELECT count(*) FROM games g WHERE g.tournament_id = t.id AND NOT g.finished) AS open_games"
        " FROM tournaments t WHERE t.id = ANY($1::text[]) ORDER BY t.id" + (" FOR UPDATE OF t" if lock else ""),
        list(tournament_ids),
    )


async def seats_of(db: Executor, tournament_ids: Sequence[str]) -> dict[str, list[Entrant]]:
    """The seats (T-13, T-14) of several tournaments in one query: {tournament id: its seats by player id}."""
    rows = await db.fetch(
        "SELECT tournament_id, player_id, berger_number, initial_rank, rating FROM entrants"
        " WHERE tournament_id = ANY($1::text[]) AND initial_rank IS NOT NULL ORDER BY tournament_id, player_id",
        list(tournament_ids),
    )
    result: dict[str, list[Entrant]] = {tournament_id: [] for tournament_id in tournament_ids}
    for row in rows:
        result[row["tournament_id"]].append(
            Entrant(row["player_id"], row["berger_number"], row["initial_rank"], row["rating"]))
    return result


async def tournament_by_request(db: Executor, creator_id: str, request_id: str) -> Row | None:
    """The tournament a creator made with this request id, if any."""
    return await db.fetchrow(
        "SELECT * FROM tournaments WHERE creator_id = $1 AND request_id = $2", creator_id, request_id
    )


async def entrant_count(db: Executor, tournament_id: str) -> int:
    """How many entrants are registered."""
    return int(await db.fetchval("SELECT count(*) FROM entrants WHERE tournament_id = $1", tournament_id))


async def entrant_ids(db: Executor, tournament_id: str) -> list[str]:
    """The registered entrants' ids, sorted."""
    rows = await db.fetch(
        "SELECT player_id FROM entrants WHERE tournament_id = $1 ORDER BY player_id", tournament_id
    )
    return [row["player_id"] for row in rows]


async def entrant_rows(db: Executor, tournament_id: str) -> list[Row]:
    """Every entrant row, by player id."""
    return await db.fetch("SELECT * FROM entrants WHERE tournament_id = $1 ORDER BY player_id", tournament_id)


async def seats(db: Executor, tournament_id: str) -> list[Entrant]:
    """The entrants with the numbers fixed at the start (T-13, T-14), by player id."""
    return (await seats_of(db, [tournament_id]))[tournament_id]


async def is_entered(db: Executor, tournament_id: str, player_id: str) -> bool:
    """Whether the player holds a seat."""
    return bool(await db.fetchval(
        "SELECT EXISTS (SELECT 1 FROM entrants WHERE tournament_id = $1 AND player_id = $2)", tournament_id, player_id
    ))


async def played_games(db: Executor, tournament_id: str) -> list[PlayedGame[str]]:
    """Every scored game, in round and board order."""
    return (await played_games_of(db, [tournament_id]))[tournament_id]


async def played_games_of(db: Executor, tournament_ids: Sequence[str]) -> dict[str, list[PlayedGame[str]]]:
    """Every scored game of several tournaments in one query: {tournament id: its games in round and board order}."""
    rows = await db.fetch(
        "SELECT tournament_id, round, white_id, black_id, white_points, black_points, kind, leg FROM games"
        " WHERE tournament_id = ANY($1::text[]) AND finished ORDER BY tournament_id, round, board, leg",
        list(tournament_ids),
    )
    result: dict[str, list[PlayedGame[str]]] = {tournament_id: [] for tournament_id in tournament_ids}
    # A ResultKind is a StrEnum: its stored value finds it, without a ResultKind(...) per row.
    kinds = {kind.value: kind for kind in ResultKind}
    for r in rows:
        result[r["tournament_id"]].append(PlayedGame(
            r["round"], r["white_id"], r["black_id"], r["white_points"], r["black_points"], kinds[r["kind"]], r["leg"]))
    return result


async def byes(db: Executor, tournament_id: str) -> list[Bye[str]]:
    """The byes credited so far (T-8)."""
    return (await byes_of(db, [tournament_id]))[tournament_id]


async def byes_of(db: Executor, tournament_ids: Sequence[str]) -> dict[str, list[Bye[str]]]:
    """The byes credited so far (T-8) in several tournaments in one query: {tournament id: its byes by round}."""
    rows = await db.fetch(
        "SELECT tournament_id, round, bye_id, bye_points FROM rounds"
        " WHERE tournament_id = ANY($1::text[]) AND bye_id IS NOT NULL ORDER BY tournament_id, round",
        list(tournament_ids),
    )
    result: dict[str, list[Bye[str]]] = {tournament_id: [] for tournament_id in tournament_ids}
    for r in rows:
        result[r["tournament_id"]].append(Bye(r["round"], r["bye_id"], r["bye_points"]))
    return result


async def open_games(db: Executor, tournament_id: str) -> int:
    """Games requested and still without a result."""
    return int(await db.fetchval(
        "SELECT count(*) FROM games WHERE tournament_id = $1 AND NOT finished", tournament_id
    ))


async def open_game_rows(db: Executor, tournament_id: str) -> list[Row]:
    """The games still without a result."""
    return await db.fetch(
        "SELECT * FROM games WHERE tournament_id = $1 AND NOT finished ORDER BY round, board, leg", tournament_id
    )


async def rounds(db: Executor, tournament_id: str, round_number: int = 0) -> list[Row]:
    """Paired rounds (one, or all when `round_number` is 0)."""
    if round_number:
        return await db.fetch(
            "SELECT * FROM rounds WHERE tournament_id = $1 AND round = $2", tournament_id, round_number
        )
    return await db.fetch("SELECT * FROM rounds WHERE tournament_id = $1 ORDER BY round", tournament_id)


async def games(db: Executor, tournament_id: str, round_number: int = 0) -> list[Row]:
    """Games of one round, or of all rounds, in board order."""
    if round_number:
        return await db.fetch(
            "SELECT * FROM games WHERE tournament_id = $1 AND round = $2 ORDER BY board, leg",
            tournament_id, round_number,
        )
    return await db.fetch("SELECT * FROM games WHERE tournament_id = $1 ORDER BY round, board, leg", tournament_id)


async def our_games(db: Executor, game_ids: Sequence[str]) -> dict[str, Row]:
    """{game id: row} of the games among `game_ids` that are ours, with their tournament's `rated`."""
    # No probe of processed_events here: `apply_results` records the events and says which were
    # new, so each result costs one index lookup fewer. On a table never analysed (a server with
    # autovacuum off), PostgreSQL planned a probe by (consumer, event_id) = ANY(...) as a scan of
    # every event of the consumer, growing with each result. Each game is looked up by its key (a
    # LATERAL with LIMIT 1 cannot be planned as a join): as a join, PostgreSQL hashed the whole games
    # table for every batch (tests/bench/bench_pairing_service.py; figures in docs/performance.md).
    rows = await db.fetch(
        "SELECT g.game_id, g.tournament_id, g.round, g.white_id, g.black_id, g.finished, t.rated"
        " FROM unnest($1::text[]) AS e(game_id)"
        " CROSS JOIN LATERAL (SELECT * FROM games WHERE games.game_id = e.game_id LIMIT 1) AS g"
        " JOIN tournaments t ON t.id = g.tournament_id",
        list(dict.fromkeys(game_ids)),
    )
    return {row["game_id"]: row for row in rows}


# The topics whose results stand only until the play site's GameFinished says otherwise.
PROVISIONAL_SOURCES: Final = ("clock.flagged", "game.abandoned")


@dataclass(frozen=True)
class ResultRow:
    """A result to record on a game."""

    game_id: str
    kind: str
    result: str
    termination: str
    white_points: int
    black_points: int
    rated: bool
    decided_by: str


async def record_results(connection: Connection, results: Sequence[ResultRow], at: datetime) -> dict[str, Row]:
    """Score each game unless it has a result already (the first result wins); {game id: game row} of those scored.

    One statement for the whole batch; `results` must name each game once.
    """
    if not results:
        return {}
    rows = await connection.fetch(
        """
        UPDATE games AS g SET finished = true, kind = r.kind, result = r.result, termination = r.termination,
            white_points = r.white_points, black_points = r.black_points, rated = r.rated,
            decided_by = r.decided_by, finished_at = $9
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::bool[], $8::text[])
            AS r(game_id, kind, result, termination, white_points, black_points, rated, decided_by)
        WHERE g.game_id = r.game_id AND NOT g.finished
        RETURNING g.*
        """,
        [r.game_id for r in results], [r.kind for r in results], [r.result for r in results],
        [r.termination for r in results], [r.white_points for r in results], [r.black_points for r in results],
        [r.rated for r in results], [r.decided_by for r in results], at,
    )
    return {row["game_id"]: row for row in rows}


@dataclass(frozen=True)
class ResultToApply:
    """A result for `apply_results`: the row, the event that carries it, whether it is the play site's final word."""

    row: ResultRow
    event_id: str
    final_word: bool


@dataclass(frozen=True)
class AppliedResults:
    """What `apply_results` did: {game id: game row} scored and corrected, the rounds now complete, the events new."""

    scored: dict[str, Row]
    corrected: dict[str, Row]
    complete: list[str]
    recorded: frozenset[str]


async def apply_results(db: Executor, consumer: str, event_ids: Sequence[str],
                        results: Sequence[ResultToApply], at: datetime) -> AppliedResults:
    """Record `event_ids` as processed by `consumer` and apply the results of those recorded now, atomically.

    One statement, so one round trip and its own transaction: the events are recorded (the
    idempotency of the consumer), each game without a result is scored (the first result wins),
    each final word (T-16..T-19) replaces a differing provisional result (a flag's, an
    abandonment's) while the tournament runs (a finished tournament's table is final; the
    decision replaced is kept in `overruled`), and the tournaments touched whose every requested
    game now has a result are named. A result whose event was recorded before (a redelivery, or
    another replica meanwhile) changes nothing; `recorded` names the events recorded now.
    `results` may hold several results of a game, in arrival order: of those recorded now, the
    first final word is applied, else the first result (a redelivered event never stands in the
    way of a new one, which only the statement knows apart).
    """
    rows = await db.fetch(
        """
        WITH fresh AS (
            INSERT INTO processed_events (consumer, event_id) SELECT $1, unnest($2::text[])
            ON CONFLICT DO NOTHING RETURNING event_id
        ), chosen AS (
            -- The play site's final word outranks a provisional result (T-16..T-19), then arrival order.
            SELECT DISTINCT ON (r.game_id) r.*
            FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[],
                        $9::int[], $10::bool[], $11::text[], $12::bool[]) WITH ORDINALITY
                AS r(game_id, event_id, kind, result, termination, white_points, black_points, rated, decided_by,
                     final, position)
            WHERE r.event_id IN (SELECT event_id FROM fresh)
            ORDER BY r.game_id, r.final DESC, r.position
        ), scored AS (
            UPDATE games AS g SET finished = true, kind = r.kind, result = r.result, termination = r.termination,
                white_points = r.white_points, black_points = r.black_points, rated = r.rated,
                decided_by = r.decided_by, finished_at = $13
            FROM chosen AS r WHERE g.game_id = r.game_id AND NOT g.finished
            RETURNING g.*
        ), corrected AS (
            UPDATE games AS g SET kind = r.kind, result = r.result, termination = r.termination,
                white_points = r.white_points, black_points = r.black_points, rated = r.rated,
                overruled = g.decided_by, decided_by = r.decided_by
            FROM chosen AS r, tournaments AS t
            -- A game scored just above looked open to this statement: only the others are looked up.
            WHERE r.final AND r.game_id NOT IN (SELECT game_id FROM scored) AND g.game_id = r.game_id
                AND g.finished AND t.id = g.tournament_id
                AND t.state = 'running' AND split_part(g.decided_by, ':', 1) = ANY($14::text[])
                AND (g.kind, g.result, g.termination, g.white_points, g.black_points, g.rated)
                    IS DISTINCT FROM (r.kind, r.result, r.termination, r.white_points, r.black_points, r.rated)
            RETURNING g.*
        ), complete AS (
            -- Every statement of a WITH sees the same snapshot: the games scored just above still look open.
            SELECT x.tournament_id FROM (SELECT tournament_id FROM scored UNION SELECT tournament_id FROM corrected)
                AS x
            WHERE NOT EXISTS (SELECT 1 FROM games o WHERE o.tournament_id = x.tournament_id AND NOT o.finished
                              AND o.game_id NOT IN (SELECT game_id FROM scored))
        )
        SELECT s.*, true AS now_scored, s.tournament_id IN (SELECT tournament_id FROM complete) AS round_complete,
            NULL::text[] AS recorded
        FROM scored AS s
        UNION ALL
        SELECT c.*, false, c.tournament_id IN (SELECT tournament_id FROM complete), NULL FROM corrected AS c
        UNION ALL
        -- One row without a game: the events recorded now (the others were processed before).
        SELECT (NULL::games).*, NULL, NULL, ARRAY(SELECT event_id FROM fresh)
        """,
        consumer, list(event_ids),
        [r.row.game_id for r in results], [r.event_id for r in results], [r.row.kind for r in results],
        [r.row.result for r in results], [r.row.termination for r in results], [r.row.white_points for r in results],
        [r.row.black_points for r in results], [r.row.rated for r in results], [r.row.decided_by for r in results],
        [r.final_word for r in results], at, list(PROVISIONAL_SOURCES),
    )
    games = [row for row in rows if row["recorded"] is None]
    return AppliedResults(
        scored={row["game_id"]: row for row in games if row["now_scored"]},
        corrected={row["game_id"]: row for row in games if not row["now_scored"]},
        complete=sorted({row["tournament_id"] for row in games if row["round_complete"]}),
        recorded=frozenset(next(row["recorded"] for row in rows if row["recorded"] is not None)),
    )


async def without_open_games(db: Executor, tournament_ids: Sequence[str]) -> list[str]:
    """The tournaments among `tournament_ids` whose every game has a result, as committed now."""
    rows = await db.fetch(
        "SELECT t.id FROM unnest($1::text[]) AS t(id)"
        " WHERE NOT EXISTS (SELECT 1 FROM games g WHERE g.tournament_id = t.id AND NOT g.finished)",
        list(tournament_ids),
    )
    return [row["id"] for row in rows]


async def due_work(db: Executor, now: datetime) -> list[str]:
    """Tournaments that may have a step due: start time passed, starting, or running with no open game or closed."""
    rows = await db.fetch(
        """
        SELECT id FROM tournaments WHERE state = 'scheduled' AND starts_at <= $1
        UNION
        SELECT id FROM tournaments WHERE state = 'starting'
        UNION
        SELECT t.id FROM tournaments t WHERE t.state = 'running' AND (
            t.closes_at + interval '10 minutes' <= $1
            OR NOT EXISTS (SELECT 1 FROM games g WHERE g.tournament_id = t.id AND NOT g.finished))
        """,
        now,
    )
    return [row["id"] for row in rows]


async def counts_by_state(db: Executor) -> dict[str, int]:
    """How many tournaments are in each state."""
    rows = await db.fetch("SELECT state, count(*) AS n FROM tournaments GROUP BY state")
    return {row["state"]: int(row["n"]) for row in rows}


async def upcoming(db: Executor, now: datetime, after: tuple[datetime, str] | None, variant: str | None,
                   limit: int) -> list[Row]:
    """Public tournaments not started yet, by start time then id, after a keyset cursor."""
    clauses = ["state = 'scheduled'", "NOT private", "starts_at > $1"]
    args: list[Any] = [now]
    if after is not None:
        args.extend(after)
        clauses.append(f"(starts_at, id) > (${len(args) - 1}, ${len(args)})")
    if variant is not None:
        args.append(variant)
        clauses.append(f"variant = ${len(args)}")
    args.append(limit)
    return await db.fetch(
        "SELECT t.*, (SELECT count(*) FROM entrants e WHERE e.tournament_id = t.id) AS entrant_count"
        f" FROM tournaments t WHERE {' AND '.join(clauses)} ORDER BY starts_at, id LIMIT ${len(args)}",
        *args,
    )
