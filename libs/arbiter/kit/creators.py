"""A-2 across services: one live competition per creator, held in a schema every service shares.

The registry is the fact; `arbiter.competition.access.check_may_create` is the rule.
"""

from __future__ import annotations

import asyncpg

from arbiter.competition.access import AccessRefused, LiveCompetition, check_may_create
from arbiter.kit.actors import access_error
from arbiter.kit.db import Connection, Migration, migrate

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
    connection: Connection, creator_id: str, kind: str, competition_id: str
) -> None:
    """Record that `creator_id` runs `competition_id`, or refuse if they already run one (A-2).

    Call in the transaction that creates the competition: of two concurrent creates by
    one person the primary key lets exactly one commit.
    """
    while True:
        try:
            check_may_create(creator_id, await live_competition(connection, creator_id))
        except AccessRefused as refused:
            raise access_error(refused) from None
        claimed = await connection.fetchval(
            f"INSERT INTO {REGISTRY_SCHEMA}.live_competitions (creator_id, kind, competition_id)"
            " VALUES ($1, $2, $3) ON CONFLICT (creator_id) DO NOTHING RETURNING 1",
            creator_id, kind, competition_id,
        )
        if claimed is not None:
            return
        # Another create by the same creator committed between the read and the insert: the next read
        # sees it and refuses. Only a claim released meanwhile again lets this one try once more.


async def live_competition(connection: Connection, creator_id: str) -> LiveCompetition | None:
    """The competition `creator_id` runs, as the registry holds it (A-2); None when they run none."""
    row = await connection.fetchrow(
        f"SELECT kind, competition_id FROM {REGISTRY_SCHEMA}.live_competitions WHERE creator_id = $1", creator_id
    )
    return None if row is None else LiveCompetition(row["kind"], row["competition_id"])


async def release_creator_slot(connection: Connection, creator_id: str, competition_id: str) -> None:
    """Free the creator's slot when `competition_id` finishes or is cancelled (A-2)."""
    await connection.execute(
        f"DELETE FROM {REGISTRY_SCHEMA}.live_competitions WHERE creator_id = $1 AND competition_id = $2",
        creator_id, competition_id,
    )
