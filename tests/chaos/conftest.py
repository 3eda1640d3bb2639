"""The chaos suite's fixtures: a system on its own broker, Redis and database; the suite's figures.

These tests run with `make chaos` (`pytest tests/chaos -s`), not in `make test`: pytest's
testpaths leave tests/chaos out unless it is named. CHAOS_RESULTS names the JSON file
the figures are written to (default: .arbiter/chaos-results.json).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arbiter.devstack.chaos import FaultCounts
from arbiter.devstack.infra import create_database, drop_database, start_redis, start_tansu
from arbiter.devstack.processes import ManagedProcess, free_port
from arbiter.devstack.stack import SERVICE_NAMES, SystemStack

HERE = Path(__file__).resolve().parent


class Figures:
    """The suite's figures: faults injected, events redelivered, differences found."""

    def __init__(self) -> None:
        self.counts = FaultCounts()
        self.differences: dict[str, list[str]] = {}
        self.tests: dict[str, dict[str, Any]] = {}

    def record(self, test: str, counts: FaultCounts, differences: list[str], **extra: Any) -> None:
        self.counts.add(counts)
        self.differences[test] = differences
        self.tests[test] = {"faults": counts.as_dict(), "differences": len(differences), **extra}

    def as_dict(self) -> dict[str, Any]:
        return {
            "faults_injected": self.counts.faults,
            "faults_by_kind": self.counts.by_kind(),
            "services_killed": dict(sorted(self.counts.killed.items())),
            "events_redelivered": self.counts.events_redelivered + self.counts.events_replayed_out_of_order,
            "events_redelivered_in_order": self.counts.events_redelivered,
            "events_redelivered_out_of_order": self.counts.events_replayed_out_of_order,
            "differences_found": sum(len(d) for d in self.differences.values()),
            "counts": self.counts.as_dict(),
            "tests": self.tests,
            "differences": self.differences,
        }


@pytest.fixture(scope="session")
def chaos_figures() -> Iterator[Figures]:
    figures = Figures()
    yield figures
    if not figures.tests:
        return
    data = figures.as_dict()
    path = Path(os.environ.get("CHAOS_RESULTS", ".arbiter/chaos-results.json"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    kinds = ", ".join(f"{kind} {n}" for kind, n in data["faults_by_kind"].items())
    killed = ", ".join(f"{name} {n}" for name, n in data["services_killed"].items()) or "none"
    print("\n== chaos figures (tests run: " + ", ".join(figures.tests) + ")")
    print(f"faults injected:    {data['faults_injected']}  ({kinds}; killed: {killed})")
    print(f"events redelivered: {data['events_redelivered']}  (in order, fresh consumer groups: "
          f"{data['events_redelivered_in_order']}; out of order, shuffled replay: "
          f"{data['events_redelivered_out_of_order']})")
    print(f"differences found:  {data['differences_found']}")
    for test, found in figures.differences.items():
        for line in found:
            print(f"  {test}: {line}")
    print(f"(written to {path})")


class Systems:
    """Systems started on a broker, a Redis and a database of their own; stopped by `close`."""

    def __init__(self, postgres_server_url: str, directory: Path) -> None:
        self.postgres_server_url = postgres_server_url
        self.directory = directory
        self.stacks: list[SystemStack] = []
        self.infra: list[ManagedProcess] = []
        self.databases: list[str] = []

    def start(self, names: Iterable[str] = SERVICE_NAMES, *, time_scale: float = 60.0,
              extra_env: dict[str, str] | None = None) -> SystemStack:
        n = len(self.stacks)
        kafka_port, redis_port = free_port(), free_port()
        tansu = start_tansu(kafka_port, self.directory / f"tansu-{n}.log")
        self.infra.append(tansu)
        redis = start_redis(redis_port, self.directory / f"redis-{n}" / "redis.log")
        self.infra.append(redis)
        database = f"arbiter_chaos_{uuid.uuid4().hex[:10]}"
        database_url = asyncio.run(create_database(self.postgres_server_url, database))
        self.databases.append(database)
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{kafka_port}",
               "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0", "DATABASE_URL": database_url}
        stack = SystemStack(self.directory / f"system-{n}", time_scale=time_scale, free_ports=True, environ=env,
                            extra_env=dict(extra_env or {}), say=lambda _line: None)
        stack.chaos_infra = {"tansu": tansu, "redis": redis}  # type: ignore[attr-defined]
        self.stacks.append(stack)
        stack.start_infrastructure()
        stack.start_services(names)
        stack.wait_serving(timeout=90, names=names)
        return stack

    def close(self) -> None:
        for stack in self.stacks:
            stack.stop()
        for process in self.infra:
            process.stop(signal.SIGINT if process.name == "tansu" else signal.SIGTERM)
        # The machine's server outlives the suite, as for the test session's database (tests/conftest.py).
        if os.environ.get("ARBITER_KEEP_TEST_DATABASE") != "1":
            for database in self.databases:
                asyncio.run(drop_database(self.postgres_server_url, database))


@pytest.fixture
def own_system(postgres_server_url: str, tmp_path: Path) -> Iterator[Callable[..., SystemStack]]:
    """Start the services on a broker, a Redis and a database of their own (faults hurt nobody else).

    `own_system(time_scale=60)` returns the SystemStack; `.chaos_infra` holds the tansu and
    redis processes (to pause or flush them).
    """
    systems = Systems(postgres_server_url, tmp_path)
    yield systems.start
    systems.close()


@pytest.fixture(scope="session")
def session_systems(postgres_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Systems]:
    """Like `own_system`, for a system several tests share (the undisturbed reference run)."""
    systems = Systems(postgres_server_url, tmp_path_factory.mktemp("chaos-session"))
    yield systems
    systems.close()
