"""The five services on a database and Redis of their own, shared by every fuzz test of the module.

Starting the stack takes about 20 s on two cores, so the fuzz tests share one (module
scope) instead of one per test; it is started exactly as `start_system()` does, but on
a fresh PostgreSQL database and Redis logical database so that the state comparisons
see nothing but what the fuzzed calls did. The database is dropped afterwards
(FUZZ_KEEP_DATABASE=1 keeps it for a look).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator

import pytest
import redis

from arbiter_tools.devstack.infra import create_database, drop_database
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from tests.integration.fuzz.fuzz_support import Database, FuzzSummary

# Redis logical database the fuzzed stack uses (the session's other tests use the URL's own).
FUZZ_REDIS_DB = 7


def _redis_with_db(url: str, db: int) -> str:
    head, _, tail = url.rpartition("/")
    return f"{head}/{db}" if tail.isdigit() and head.count("/") >= 2 else url.rstrip("/") + f"/{db}"


@pytest.fixture(scope="module")
def fuzz_env(infra_env: dict[str, str], postgres_server_url: str) -> Iterator[dict[str, str]]:
    """infra_env, but with a fresh database (dropped afterwards) and a Redis logical database of its own."""
    name = f"arbiter_fuzz_{uuid.uuid4().hex[:10]}"
    database_url = asyncio.run(create_database(postgres_server_url, name))
    redis_url = _redis_with_db(infra_env["REDIS_URL"], FUZZ_REDIS_DB)
    yield {**infra_env, "DATABASE_URL": database_url, "REDIS_URL": redis_url}
    if os.environ.get("FUZZ_KEEP_DATABASE") != "1":
        asyncio.run(drop_database(postgres_server_url, name))
    client = redis.Redis.from_url(redis_url)
    try:
        client.flushdb()
    finally:
        client.close()


@pytest.fixture(scope="module")
def fuzz_stack(fuzz_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemStack]:
    """All five services, as `start_system()` starts them, stopped after the module."""
    stack = SystemStack(
        tmp_path_factory.mktemp("fuzz-system"), time_scale=1.0, free_ports=True,
        environ={**os.environ, **fuzz_env}, extra_env={}, say=lambda _line: None,
    )
    try:
        stack.start_infrastructure()
        stack.start_services(SERVICE_NAMES)
        stack.wait_serving(timeout=90, names=SERVICE_NAMES)
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def fuzz_db(fuzz_stack: SystemStack) -> Iterator[Database]:
    """A direct connection to the fuzzed stack's database, with the change audit installed."""
    db = Database(fuzz_stack.database_url)
    try:
        yield db
    finally:
        db.close()


@pytest.fixture(scope="module")
def fuzz_summary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzSummary]:
    """Figures of every fuzz test, printed and written to <basetemp>/fuzz-summary.json at the end."""
    summary = FuzzSummary(tmp_path_factory.getbasetemp() / "fuzz-summary.json")
    yield summary
    summary.write()
    print()
    print(summary.render())
    print(f"fuzz summary written to {summary.path}")
