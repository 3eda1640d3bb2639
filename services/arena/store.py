"""PostgreSQL reads and writes of the arena service: arenas, players, games (the system of record)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from arbiter.competition.arena import ArenaGame, ArenaPlayerRecord, ArenaResult

Connection = asyncpg.Connection | asyncpg.Pool
LIVE_STATES = ("scheduled", "running", "closing")


async def arena(db: Connection, arena_id: str, lock: str = "") -> asyncpg.Record | None:
    """One arena row; `lock` is "" or "FOR SHARE" / "FOR UPDATE" (inside a transaction)."""
    return await db.fetchrow(f"SELECT * FROM arenas WHERE id = $1 {lock}", arena_id)


async def lock_pairing(connection: asyncpg.Connection, arena_id: str) -> None:
    """In a transaction: take turns with the arena's pairing saves, joins and leaves (held until commit)."""
    # An advisory lock rather than the arena's row: results hold that row in share mode all
    # the time, and a pairing that had to wait for them would add their time to every requeue.
    await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", PAIRING_LOCK + arena_id)


PAIRING_LOCK = "arena-pairing:"


async def arena_by_request(db: Connection, creator_id: str, request_id: str) -> asyncpg.Record | None:
    """The arena a creator made with `request_id` (a retried Create returns it)."""
    return await db.fetchrow("SELECT * FROM arenas WHERE creator_id = $1 AND request_id = $2", creator_id, request_id)


async def counts(db: Connection, arena_id: str) -> tuple[int, int]:
    """(active players, finished games) of one arena."""
    row = await db.fetchrow(
        "SELECT (SELECT count(*) FROM arena_players WHERE arena_id = $1 AND active) AS players,"
        " (SELECT count(*) FROM arena_games WHERE arena_id = $1 AND result IS NOT NULL) AS games",
        arena_id,
    )
    return int(row["players"]), int(row["games"])


async def player(db: Connection, arena_id: str, player_id: str, lock: str = "") -> asyncpg.Record | None:
    """One player's row in one arena."""
    return await db.fetchrow(
        f"SELECT * FROM arena_players WHERE arena_id = $1 AND player_id = $2 {lock}", arena_id, player_id
    )


def record_of(row: Any) -> ArenaPlayerRecord:
    """The AR-4/AR-5 running totals stored on a player's row."""
    return ArenaPlayerRecord(row["points"], row["wins"], row["draws"], row["losses"], row["streak"])


async def running_game_of(db: Connection, arena_id: str, player_id: str) -> asyncpg.Record | None:
    """The player's unfinished game in this arena, if any."""
    return await db.fetchrow(
        "SELECT * FROM arena_games WHERE arena_id = $1 AND result IS NULL AND (white_id = $2 OR black_id = $2)"
        " LIMIT 1",
        arena_id, player_id,
    )


async def running_games(db: Connection, arena_id: str) -> int:
    """How many games of the arena are still being played."""
    return int(await db.fetchval("SELECT count(*) FROM arena_games WHERE arena_id = $1 AND result IS NULL", arena_id))


async def live_arena_ids(db: Connection, states: Sequence[str] = ("running", "closing")) -> list[str]:
    """Arenas in one of `states` (the ones someone must own)."""
    rows = await db.fetch("SELECT id FROM arenas WHERE state = ANY($1::text[]) ORDER BY id", list(states))
    return [row["id"] for row in rows]


async def players(db: Connection, arena_id: str) -> list[asyncpg.Record]:
    """Every player who ever joined the arena."""
    return await db.fetch("SELECT * FROM arena_players WHERE arena_id = $1 ORDER BY player_id", arena_id)


async def games(db: Connection, arena_id: str) -> list[asyncpg.Record]:
    """Every game of the arena in request order."""
    return await db.fetch("SELECT * FROM arena_games WHERE arena_id = $1 ORDER BY seq", arena_id)


def finished_games_in_scoring_order(rows: Sequence[Any]) -> list[ArenaGame]:
    """The finished games as the pure rules read them, in the order they were scored (AR-4 streaks)."""
    done = sorted((r for r in rows if r["result"] is not None), key=lambda r: r["scored_seq"])
    return [
        ArenaGame(r["white_id"], r["black_id"], ArenaResult(r["result"]), r["white_boosted"], r["black_boosted"],
                  r["finished_at"])
        for r in done
    ]


def game_id(arena_id: str, seq: int) -> str:
    """Deterministic game id: a pass retried after a crash re-creates the same ids, never new ones."""
    return f"{arena_id}-{seq}"
