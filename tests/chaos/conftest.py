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
from arbiter.devstack.infra import create_database, start_redis, start_tansu
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
            "events_redelivered": self.counts.events_redelivered,
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
    print("\n== chaos figures")
    print(f"faults injected:    {data['faults_injected']}  ({json.dumps(data['counts'])})")
    print(f"events redelivered: {data['events_redelivered']}")
    print(f"differences found:  {data['differences_found']}")
    for test, found in figures.differences.items():
        for line in found:
            print(f"  {test}: {line}")
    print(f"(written to {path})")


@pytest.fixture
def own_system(postgres_server_url: str, tmp_path: Path) -> Iterator[Callable[..., SystemStack]]:
    """Start the services on a broker, a Redis and a database of their own (faults hurt nobody else).

    `own_system(time_scale=60)` returns the SystemStack; `.chaos_infra` holds the tansu and
    redis processes (to pause or flush them).
    """
    stacks: list[SystemStack] = []
    infra: list[ManagedProcess] = []

    def start(names: Iterable[str] = SERVICE_NAMES, *, time_scale: float = 60.0,
              extra_env: dict[str, str] | None = None) -> SystemStack:
        n = len(stacks)
        kafka_port, redis_port = free_port(), free_port()
        tansu = start_tansu(kafka_port, tmp_path / f"tansu-{n}.log")
        infra.append(tansu)
        redis = start_redis(redis_port, tmp_path / f"redis-{n}" / "redis.log")
        infra.append(redis)
        database_url = asyncio.run(create_database(postgres_server_url, f"arbiter_chaos_{uuid.uuid4().hex[:10]}"))
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{kafka_port}",
               "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0", "DATABASE_URL": database_url}
        stack = SystemStack(tmp_path / f"system-{n}", time_scale=time_scale, free_ports=True, environ=env,
                            extra_env=dict(extra_env or {}), say=lambda _line: None)
        stack.chaos_infra = {"tansu": tansu, "redis": redis}  # type: ignore[attr-defined]
        stacks.append(stack)
        stack.start_infrastructure()
        stack.start_services(names)
        stack.wait_serving(timeout=90, names=names)
        return stack

    yield start
    for stack in stacks:
        stack.stop()
    for process in infra:
        process.stop(signal.SIGINT if process.name == "tansu" else signal.SIGTERM)
