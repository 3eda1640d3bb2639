"""The openings service as a real process on the session's PostgreSQL, Kafka and Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from arbiter_tools.devstack.stack import SystemStack

# A short Kafka session lets a (re)started replica join its consumer group in about a
# second instead of waiting out the default 6 s; it changes nothing else.
FAST_GROUP_ENV = {"KAFKA_SESSION_TIMEOUT_MS": "2000", "KAFKA_HEARTBEAT_INTERVAL_MS": "300"}


# Sync fixtures: starting a stack runs its own event loop, which an async test's loop forbids.
@pytest.fixture
def openings(start_system: Callable[..., SystemStack]) -> SystemStack:
    """One openings replica, stopped after the test."""
    return start_system(("openings",), extra_env=FAST_GROUP_ENV)


@pytest.fixture
def second_openings(start_system: Callable[..., SystemStack], openings: SystemStack) -> SystemStack:
    """A second replica of the openings service on the same database and consumer group."""
    return start_system(("openings",), extra_env=FAST_GROUP_ENV)


@pytest.fixture
async def openings_db(infra_env: dict[str, str]) -> AsyncIterator[asyncpg.Connection]:
    """A connection that reads the openings service's schema directly (what is stored)."""
    connection = await asyncpg.connect(infra_env["DATABASE_URL"], server_settings={"search_path": "openings"})
    yield connection
    await connection.close()
