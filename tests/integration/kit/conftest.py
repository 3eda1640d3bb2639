"""The kit tests' pool on a schema of its own, with the kit's tables, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from arbiter.kit.db import create_pool, migrate


@pytest.fixture
async def kit_pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool of two connections on a fresh schema holding the kit's tables (processed_events, outbox...)."""
    schema = f"kit_{uuid.uuid4().hex[:8]}"
    pool = await create_pool(database_url, schema, max_size=2)
    try:
        await migrate(pool, schema, [])
        yield pool
    finally:
        async with pool.acquire() as connection:
            await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await pool.close()
