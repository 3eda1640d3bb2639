"""Sending the services' published events again after a broker lost them (README.md, "Losing the broker")."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import asyncpg

from arbiter.kit.outbox import republish
from arbiter_tools.devstack.stack import SERVICE_NAMES

# Every schema with an outbox: the five services' (each service's schema is its name).
OUTBOX_SCHEMAS: tuple[str, ...] = tuple(SERVICE_NAMES)


async def republish_all(database_url: str, since: datetime,
                        schemas: tuple[str, ...] = OUTBOX_SCHEMAS) -> dict[str, Counter[str]]:
    """Put the events each schema's outbox published since `since` back in it; the counts by schema and topic.

    A schema without the published table (a service never started on this database, or one from
    before it existed) is passed by. The services' relays publish what is put back.
    """
    connection = await asyncpg.connect(database_url)
    try:
        found = {row["table_schema"] for row in await connection.fetch(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'outbox_published'"
            " AND table_schema = ANY($1::text[])", list(schemas))}
        counts: dict[str, Counter[str]] = {}
        for schema in schemas:
            if schema not in found:
                continue
            async with connection.transaction():
                await connection.execute(f'SET LOCAL search_path TO "{schema}"')
                counts[schema] = await republish(connection, since)
        return counts
    finally:
        await connection.close()


def republished_total(counts: dict[str, Counter[str]]) -> int:
    """How many events `republish_all` put back, over every schema and topic."""
    return sum(sum(topics.values()) for topics in counts.values())
