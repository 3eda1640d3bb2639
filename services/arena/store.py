"""PostgreSQL reads and writes of the arena service: arenas, players, games (the system of record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from arbiter.competition.arena import ArenaGame, ArenaPlayerRecord, BoostableGame, FinishedGame
from arbiter.kit.db import Connection, Executor, fetch_one
from arbiter.vocabulary import GameResult

LIVE_STATES = ("scheduled", "running", "closing")


async def arena(db: Executor, arena_id: str, lock: str = "") -> asyncpg.Record | None:
    """One arena row; `lock` is "" or "FOR SHARE" / "FOR UPDATE" (inside a transaction)."""
    return await db.fetchrow(f"SELECT * FROM arenas WHERE id = $1 {lock}", arena_id)


async def lock_pairing(connection: Connection, arena_id: str) -> None:
    """In a transaction: take turns with the arena's pairing saves, joins and leaves (held until commit)."""
    # An advisory lock rather than the arena's row: results hold that row in share mode all
    # the time, and a pairing that had to wait for them would add their time to every requeue.
    await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", PAIRING_LOCK + arena_id)


PAIRING_LOCK = "arena-pairing:"


async def arena_by_request(db: Executor, creator_id: str, request_id: str) -> asyncpg.Record | None:
    """The arena a creator made with `request_id` (a retried Create returns it)."""
    return await db.fetchrow("SELECT * FROM arenas WHERE creator_id = $1 AND request_id = $2", creator_id, request_id)


async def counts(db: Executor, arena_id: str) -> tuple[int, int]:
    """(active players, finished games) of one arena."""
    row = await fetch_one(
        db,
        "SELECT (SELECT count(*) FROM arena_players WHERE arena_id = $1 AND active) AS players,"
        " (SELECT count(*) FROM arena_games WHERE arena_id = $1 AND result IS NOT NULL) AS games",
        arena_id,
    )
    return int(row["players"]), int(row["games"])


async def player(db: Executor, arena_id: str, player_id: str, lock: str = "") -> asyncpg.Record | None:
    """One player's row in one arena."""
    return await db.fetchrow(
        f"SELECT * FROM arena_players WHERE arena_id = $1 AND player_id = $2 {lock}", arena_id, player_id
    )


def record_of(row: Any) -> ArenaPlayerRecord:
    """The AR-4/AR-5 running totals stored on a player's row."""
    return ArenaPlayerRecord(row["points"], row["wins"], row["draws"], row["losses"], row["streak"])


async def running_game_of(db: Executor, arena_id: str, player_id: str) -> asyncpg.Record | None:
    """The player's unfinished game in this arena, if any."""
    return await db.fetchrow(
        "SELECT * FROM arena_games WHERE arena_id = $1 AND result IS NULL AND (white_id = $2 OR black_id = $2)"
        " LIMIT 1",
        arena_id, player_id,
    )


async def running_games(db: Executor, arena_id: str) -> int:
    """How many games of the arena are still being played."""
    return int(await db.fetchval("SELECT count(*) FROM arena_games WHERE arena_id = $1 AND result IS NULL", arena_id))


async def live_arena_ids(db: Executor, states: Sequence[str] = ("running", "closing")) -> list[str]:
    """Arenas in one of `states` (the ones someone must own)."""
    rows = await db.fetch("SELECT id FROM arenas WHERE state = ANY($1::text[]) ORDER BY id", list(states))
    return [row["id"] for row in rows]


async def players(db: Executor, arena_id: str) -> list[asyncpg.Record]:
    """Every player who ever joined the arena."""
    return await db.fetch("SELECT * FROM arena_players WHERE arena_id = $1 ORDER BY player_id", arena_id)


async def games(db: Executor, arena_id: str) -> list[asyncpg.Record]:
    """Every game of the arena in request order."""
    return await db.fetch("SELECT * FROM arena_games WHERE arena_id = $1 ORDER BY seq", arena_id)


def finished_game(row: Any) -> ArenaGame:
    """A finished game's row as the pure rules read it; its stored boosts are the ones that counted (AR-5)."""
    return ArenaGame(row["white_id"], row["black_id"], GameResult.from_pdn(row["result"]), row["white_boosted"],
                     row["black_boosted"], row["finished_at"])


def finished_games_in_scoring_order(rows: Sequence[Any]) -> list[ArenaGame]:
    """The finished games as the pure rules read them, in the order they were scored (AR-4 streaks)."""
    return [game.counted() for game in scored_again(rows)]


def scored_again(rows: Sequence[Any]) -> list[FinishedGame]:
    """The finished games in the order they were scored, to score again: each stored boost was taken and played."""
    done = sorted((r for r in rows if r["result"] is not None), key=lambda r: r["scored_seq"])
    return [
        FinishedGame(r["game_id"], r["white_id"], r["black_id"], GameResult.from_pdn(r["result"]), r["finished_at"],
                     r["white_boosted"], r["black_boosted"], r["white_boosted"], r["black_boosted"])
        for r in done
    ]


async def games_to_score(connection: Connection, game_ids: list[str]) -> list[asyncpg.Record]:
    """In a transaction: the games of these ids, locked for scoring, in id order (a fixed lock order)."""
    return await connection.fetch(
        "SELECT * FROM arena_games WHERE game_id = ANY($1::text[]) ORDER BY game_id FOR UPDATE", game_ids
    )


async def seats_to_score(
    connection: Connection, seats: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], asyncpg.Record]:
    """In a transaction: the rows of these (arena id, player id), locked, keyed the same way."""
    rows = await connection.fetch(
        "SELECT p.* FROM arena_players p JOIN unnest($1::text[], $2::text[]) AS s(a, q)"
        " ON p.arena_id = s.a AND p.player_id = s.q ORDER BY p.arena_id, p.player_id FOR UPDATE OF p",
        [a for a, _ in seats], [q for _, q in seats],
    )
    return {(r["arena_id"], r["player_id"]): r for r in rows}


async def playing(connection: Connection, seats: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (arena id, player id) are in a game of their arena that is still running."""
    if not seats:
        return set()
    rows = await connection.fetch(
        "SELECT arena_id, white_id, black_id FROM arena_games WHERE result IS NULL"
        " AND arena_id = ANY($1::text[]) AND (white_id = ANY($2::text[]) OR black_id = ANY($2::text[]))",
        sorted({a for a, _ in seats}), sorted({p for _, p in seats}),
    )
    return {(r["arena_id"], p) for r in rows for p in (r["white_id"], r["black_id"])}


async def save_scores(
    connection: Connection, records: Mapping[tuple[str, str], ArenaPlayerRecord],
    games: Sequence[tuple[str, ArenaGame, str]],
) -> None:
    """Players' records and (game id, game as scored, termination name) in one statement, scored in the order given."""
    seats = list(records)
    await connection.execute(
        "WITH records AS (UPDATE arena_players p SET points = s.points, wins = s.wins, draws = s.draws,"
        " losses = s.losses, streak = s.streak FROM unnest($1::text[], $2::text[], $3::int[], $4::int[],"
        " $5::int[], $6::int[], $7::int[]) AS s(a, q, points, wins, draws, losses, streak)"
        " WHERE p.arena_id = s.a AND p.player_id = s.q)"
        " UPDATE arena_games g SET result = s.result, termination = s.termination, finished_at = s.at,"
        " white_boosted = s.wb, black_boosted = s.bb, scored_seq = nextval('arena_scoring_order')"
        " FROM unnest($8::text[], $9::text[], $10::text[], $11::timestamptz[], $12::bool[], $13::bool[])"
        " AS s(id, result, termination, at, wb, bb)"
        " WHERE g.game_id = s.id",
        [a for a, _ in seats], [q for _, q in seats], *(
            [getattr(records[seat], field) for seat in seats]
            for field in ("points", "wins", "draws", "losses", "streak")
        ),
        [game_id for game_id, _, _ in games], [game.result.pdn for _, game, _ in games],
        [termination for _, _, termination in games], [game.ended_at for _, game, _ in games],
        [game.white_boosted for _, game, _ in games], [game.black_boosted for _, game, _ in games],
    )


async def meetings_of(
    connection: Connection, pairs: Sequence[tuple[str, str, str]]
) -> list[tuple[str, ArenaGame]]:
    """(arena id, game) of every finished game of the pairs (arena id, lower player id, higher one) (AR-3)."""
    rows = await connection.fetch(
        "SELECT g.arena_id, g.white_id, g.black_id, g.result, g.white_boosted, g.black_boosted, g.finished_at"
        " FROM unnest($1::text[], $2::text[], $3::text[]) AS s(a, x, y)"
        " JOIN arena_games g ON g.arena_id = s.a AND g.result IS NOT NULL"
        " AND least(g.white_id, g.black_id) = s.x AND greatest(g.white_id, g.black_id) = s.y",
        [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs],
    )
    return [(row["arena_id"], finished_game(row)) for row in rows]


def boostable_game(row: Any) -> BoostableGame:
    """A game's row as a boost request reads it (AR-5)."""
    return BoostableGame(
        row["game_id"], row["white_id"], row["black_id"],
        None if row["result"] is None else GameResult.from_pdn(row["result"]),
        row["white_boosted"], row["black_boosted"], row["white_moved"], row["black_moved"],
    )


def game_id(arena_id: str, seq: int) -> str:
    """Deterministic game id: a pass retried after a crash re-creates the same ids, never new ones."""
    return f"{arena_id}-{seq}"
