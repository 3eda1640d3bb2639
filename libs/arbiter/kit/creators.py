"""A-2 across services: one live competition per creator, held in a schema every service shares."""

from __future__ import annotations

import asyncpg

from arbiter.kit.db import Migration, migrate
from arbiter.kit.errors import FailedPrecondition

REGISTRY_SCHEMA = "registry"
_REGISTRY_MIGRATIONS = [
    Migration(
        "registry/001_live_competitions",
        """
        CREATE TABLE live_competitions (
            creator_id     text PRIMARY KEY,
            kind           text NOT NULL,
            competition_id text NOT NULL,
            claimed_at     timestamptz NOT NULL DEFAULT now()
        );
        """,
    )
]


async def ensure_creator_registry(pool: asyncpg.Pool) -> None:
    """Create the shared registry schema if this is the first service to start."""
    await migrate(pool, REGISTRY_SCHEMA, _REGISTRY_MIGRATIONS, with_kit_tables=False)


async def claim_creator_slot(
    connection: asyncpg.Connection, creator_id: str, kind: str, competition_id: str
) -> None:
    """Record that `creator_id` runs `competition_id`, or refuse if they already run one (A-2).

    Call in the transaction that creates the competition: of two concurrent creates by
    one person the primary key lets exactly one commit.
    """
    claimed = await connection.fetchval(
        f"INSERT INTO {REGISTRY_SCHEMA}.live_competitions (creator_id, kind, competition_id)"
        " VALUES ($1, $2, $3) ON CONFLICT (creator_id) DO NOTHING RETURNING 1",
        creator_id, kind, competition_id,
    )
    if claimed is None:
        row = await connection.fetchrow(
            f"SELECT kind, competition_id FROM {REGISTRY_SCHEMA}.live_competitions WHERE creator_id = $1",
            creator_id,
        )
        running = f"{row['kind']} {row['competition_id']}" if row else "another competition"
        raise FailedPrecondition(
            f"player {creator_id} already runs {running}; one live competition per creator until it"
            " finishes or is cancelled (A-2)"
        )


async def release_creator_slot(connection: asyncpg.Connection, creator_id: str, competition_id: str) -> None:
    """Free the creator's slot when `competition_id` finishes or is cancelled (A-2)."""
    await connection.execute(
        f"DELETE FROM {REGISTRY_SCHEMA}.live_competitions WHERE creator_id = $1 AND competition_id = $2",
        creator_id, competition_id,
    )
