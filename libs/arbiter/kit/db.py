"""PostgreSQL: one asyncpg pool per service on its own schema, and versioned migrations."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# A connection as `asyncpg.connect` makes it or as `pool.acquire()` lends it (a proxy answering the same calls).
Connection: TypeAlias = asyncpg.Connection | PoolConnectionProxy
# Where one statement can run: a connection, or the pool, which lends one for the statement.
Executor: TypeAlias = Connection | asyncpg.Pool


class Row(Protocol):
    """A row read by column name: an asyncpg.Record, or a plain dict where a test builds one."""

    def __getitem__(self, column: str, /) -> Any: ...


_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_MIGRATION_FILE = re.compile(r"^\d{3}_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    """One SQL file applied once, in version order, inside a transaction."""

    version: str
    sql: str


def check_schema_name(schema: str) -> str:
    """Return `schema` if it is a plain lower-case identifier (it is interpolated into SQL)."""
    if not _SCHEMA_NAME.match(schema):
        raise ValueError(f"schema name {schema!r} must match {_SCHEMA_NAME.pattern}")
    return schema


def migrations_in(folder: Path, prefix: str) -> list[Migration]:
    """The `NNN_name.sql` files of `folder`, versioned as `prefix/NNN_name`."""
    if not folder.is_dir():
        # git and wheels drop empty folders: a service without migrations yet has none.
        return []
    return [
        Migration(f"{prefix}/{path.stem}", path.read_text())
        for path in sorted(folder.iterdir())
        if _MIGRATION_FILE.match(path.name)
    ]


def kit_migrations() -> list[Migration]:
    """The kit's own tables (outbox, processed events, timers)."""
    return migrations_in(Path(str(resources.files("arbiter.kit") / "migrations")), "kit")


def present(row: asyncpg.Record | None, what: str) -> asyncpg.Record:
    """`row`, read again after it was found or written (such rows are never deleted); LookupError if missing."""
    if row is None:
        raise LookupError(f"{what} is missing, though it was found or written before")
    return row


async def fetch_one(db: Executor, query: str, *args: object) -> asyncpg.Record:
    """The row of a query that always returns one (an aggregate, or a row just written)."""
    return present(await db.fetchrow(query, *args), f"the row of {query!r}")


async def _init_connection(connection: asyncpg.Connection) -> None:
    await connection.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await connection.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(connection: asyncpg.Connection) -> None:
    """Release without asyncpg's reset query (see create_pool)."""


async def create_pool(dsn: str, schema: str, min_size: int = 1, max_size: int = 10, replica: str = "") -> asyncpg.Pool:
    """A pool whose connections see `schema` first on their search path, named to the server after it and `replica`."""
    check_schema_name(schema)
    # asyncpg's default reset (UNLISTEN, RESET ALL, advisory unlock) costs a round trip on every
    # release: a pool.fetch was two round trips instead of one. Nothing here leaves session
    # state behind: advisory locks are transaction-scoped except the outbox relay's, a session
    # lock that the relay unlocks itself (or closes the connection when it cannot), settings are
    # SET LOCAL, and the outbox listener unlistens itself; asyncpg still rolls back an open
    # transaction on release.
    # Every statement is planned for its own parameters. Ours take batches of 1 to 2,000 ids in
    # arrays, and a generic plan cached while the tables were small kept scanning them whole as they
    # grew, each read slower with every result stored (figures: docs/performance.md). A custom plan
    # also sees the tables' current size, even before autovacuum has analysed them.
    name = f"arbiter-{schema}/{replica}" if replica else f"arbiter-{schema}"
    return await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, reset=_keep_session,
        server_settings={"search_path": f"{schema},public", "application_name": name,
                         "plan_cache_mode": "force_custom_plan"},
    )


async def migrate(
    pool: asyncpg.Pool, schema: str, migrations: list[Migration], *, with_kit_tables: bool = True
) -> list[str]:
    """Apply the kit's and then `migrations` not yet applied to `schema`; return the versions applied."""
    check_schema_name(schema)
    applied_now: list[str] = []
    async with pool.acquire() as connection, connection.transaction():
        # Replicas starting together must not race on the same migration.
        await connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"arbiter-migrate:{schema}")
        await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await connection.execute(f'SET LOCAL search_path TO "{schema}", public')
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row["version"] for row in await connection.fetch("SELECT version FROM schema_migrations")}
        for migration in [*(kit_migrations() if with_kit_tables else []), *migrations]:
            if migration.version in done:
                continue
            await connection.execute(migration.sql)
            await connection.execute("INSERT INTO schema_migrations (version) VALUES ($1)", migration.version)
            applied_now.append(migration.version)
    return applied_now
