"""PostgreSQL access of the openings service: the stored draws (`StoredDraw`) and the cancelled competitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from arbiter.kit.db import Connection
from arbiter.openings.modes import OpeningMode

_COLUMNS = "variant, mode, number, moves, fen, class_label, level, name, no_repeat"


@dataclass(frozen=True, slots=True)
class DrawKey:
    """Which draw is meant: one per round of one competition (O-10)."""

    kind: str
    competition_id: str
    round: int

    @property
    def seed(self) -> str:
        """The seed of the pure draw: the same key always draws the same opening."""
        return f"{self.kind}:{self.competition_id}:{self.round}"

    def describe(self) -> str:
        """The key in words, e.g. "round 3 of tournament t_42"."""
        return f"round {self.round} of {self.kind} {self.competition_id}"


@dataclass(frozen=True, slots=True)
class StoredDraw:
    """An opening drawn for one key, as saved and as returned to every later caller."""

    key: DrawKey
    variant: str
    mode: OpeningMode
    number: int | None
    moves: tuple[str, ...]
    fen: str
    class_label: str | None
    level: int | None
    name: str | None
    no_repeat: bool

    @property
    def settings(self) -> str:
        """The settings it was drawn under, as draws are keyed (see `draw_settings`)."""
        return draw_settings(self.variant, self.mode, self.number)


def draw_settings(variant: str, mode: OpeningMode, thematic_opening: int | None) -> str:
    """What a draw is asked under, e.g. "italian table_all" or "english thematic opening 7".

    Draws are stored per (competition, round, settings): a round's opening is the one drawn under
    its competition's own settings, whoever else asked for that round under others.
    """
    settings = f"{variant} {mode}"
    return f"{settings} opening {thematic_opening}" if mode is OpeningMode.THEMATIC else settings


async def lock_competition(connection: Connection, kind: str, competition_id: str) -> None:
    """Serialise draws and cancellation of one competition until the transaction ends.

    Two replicas drawing the same round, or two rounds of one Swiss, must see each
    other's draw before picking: the no-repeat exclusion (O-10) is read, then written.
    """
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))", f"arbiter-openings:{kind}:{competition_id}"
    )


async def find_draw(connection: Connection, key: DrawKey, settings: str) -> StoredDraw | None:
    """The draw stored for `key` under `settings` (`draw_settings`), if any."""
    row = await connection.fetchrow(
        f"SELECT {_COLUMNS} FROM opening_draws"
        " WHERE competition_kind = $1 AND competition_id = $2 AND round = $3 AND settings = $4",
        key.kind, key.competition_id, key.round, settings,
    )
    if row is None:
        return None
    return StoredDraw(
        key=key, variant=row["variant"], mode=OpeningMode(row["mode"]), number=row["number"],
        moves=tuple(row["moves"]), fen=row["fen"], class_label=row["class_label"], level=row["level"],
        name=row["name"], no_repeat=row["no_repeat"],
    )


async def drawn_numbers(connection: Connection, kind: str, competition_id: str, settings: str) -> set[int]:
    """The official numbers already drawn in this competition under `settings`, any round (O-10)."""
    rows = await connection.fetch(
        "SELECT number FROM opening_draws"
        " WHERE competition_kind = $1 AND competition_id = $2 AND settings = $3 AND number IS NOT NULL",
        kind, competition_id, settings,
    )
    return {row["number"] for row in rows}


async def insert_draw(connection: Connection, draw: StoredDraw, drawn_at: datetime) -> bool:
    """Save `draw` unless its key has one under the same settings already; True when this call saved it."""
    key = draw.key
    inserted = await connection.fetchval(
        f"INSERT INTO opening_draws (competition_kind, competition_id, round, {_COLUMNS}, drawn_at, settings)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
        " ON CONFLICT (competition_kind, competition_id, round, settings) DO NOTHING RETURNING 1",
        key.kind, key.competition_id, key.round, draw.variant, draw.mode.value, draw.number, list(draw.moves),
        draw.fen, draw.class_label, draw.level, draw.name, draw.no_repeat, drawn_at, draw.settings,
    )
    return inserted is not None


async def cancellation_reason(connection: Connection, kind: str, competition_id: str) -> str | None:
    """Why the competition was cancelled, or None while it is not."""
    return await connection.fetchval(
        "SELECT reason FROM cancelled_competitions WHERE competition_kind = $1 AND competition_id = $2",
        kind, competition_id,
    )


async def cancel_competition(
    connection: Connection, kind: str, competition_id: str, reason: str, cancelled_at: datetime
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
