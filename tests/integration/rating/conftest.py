"""The rating tests' shared builders live in rating_support, next to them (see its docstring); `pool` is
a fresh schema of the rating service's tables."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from arbiter.kit.db import create_pool, migrate, migrations_in
from services.rating import store

MIGRATIONS = Path(store.__file__).resolve().parent / "migrations"


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """Two connections to a schema of its own, migrated as the service migrates its own."""
    schema = f"rating_{uuid.uuid4().hex[:8]}"
    connections = await create_pool(database_url, schema, max_size=2)
    try:
        await migrate(connections, schema, migrations_in(MIGRATIONS, schema))
        yield connections
    finally:
        await connections.close()
