"""PostgreSQL access of the openings service: the stored draws and the cancelled competitions."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from arbiter.competition.types import OpeningMode
from services.openings.records import DrawKey, StoredDraw

_COLUMNS = "variant, mode, number, moves, fen, class_label, level, name, no_repeat"


async def lock_competition(connection: asyncpg.Connection, kind: str, competition_id: str) -> None:
    """Serialise draws and cancellation of one competition until the transaction ends.

    Two replicas drawing the same round, or two rounds of one Swiss, must see each
    other's draw before picking: the no-repeat exclusion (O-10) is read, then written.
    """
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))", f"arbiter-openings:{kind}:{competition_id}"
    )


async def find_draw(connection: asyncpg.Connection, key: DrawKey) -> StoredDraw | None:
    """The draw stored for `key`, if any."""
    row = await connection.fetchrow(
        f"SELECT {_COLUMNS} FROM opening_draws"
        " WHERE competition_kind = $1 AND competition_id = $2 AND round = $3",
        key.kind, key.competition_id, key.round,
    )
    if row is None:
        return None
    return StoredDraw(
        key=key, variant=row["variant"], mode=OpeningMode(row["mode"]), number=row["number"],
        moves=tuple(row["moves"]), fen=row["fen"], class_label=row["class_label"], level=row["level"],
        name=row["name"], no_repeat=row["no_repeat"],
    )


async def drawn_numbers(connection: asyncpg.Connection, kind: str, competition_id: str) -> set[int]:
    """The official numbers already drawn in this competition, any round (O-10)."""
    rows = await connection.fetch(
        "SELECT number FROM opening_draws"
        " WHERE competition_kind = $1 AND competition_id = $2 AND number IS NOT NULL",
        kind, competition_id,
    )
    return {row["number"] for row in rows}


async def insert_draw(connection: asyncpg.Connection, draw: StoredDraw, drawn_at: datetime) -> bool:
    """Save `draw` unless its key has one already; True when this call saved it."""
    key = draw.key
    inserted = await connection.fetchval(
        f"INSERT INTO opening_draws (competition_kind, competition_id, round, {_COLUMNS}, drawn_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        " ON CONFLICT (competition_kind, competition_id, round) DO NOTHING RETURNING 1",
        key.kind, key.competition_id, key.round, draw.variant, draw.mode.value, draw.number, list(draw.moves),
        draw.fen, draw.class_label, draw.level, draw.name, draw.no_repeat, drawn_at,
    )
    return inserted is not None


async def cancellation_reason(connection: asyncpg.Connection, kind: str, competition_id: str) -> str | None:
    """Why the competition was cancelled, or None while it is not."""
    return await connection.fetchval(
        "SELECT reason FROM cancelled_competitions WHERE competition_kind = $1 AND competition_id = $2",
        kind, competition_id,
    )


async def cancel_competition(
    connection: asyncpg.Connection, kind: str, competition_id: str, reason: str, cancelled_at: datetime
) -> int:
    """Forget the competition's draws and remember it is cancelled; return how many draws were dropped."""
    await connection.execute(
        "INSERT INTO cancelled_competitions (competition_kind, competition_id, reason, cancelled_at)"
        " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        kind, competition_id, reason, cancelled_at,
    )
    status = await connection.execute(
        "DELETE FROM opening_draws WHERE competition_kind = $1 AND competition_id = $2", kind, competition_id
    )
    return int(status.split()[-1])
