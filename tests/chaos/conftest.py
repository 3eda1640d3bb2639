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
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arbiter_tools.chaos import FaultCounts, PrivatePostgres
from arbiter_tools.devstack.infra import create_database, drop_database, start_redis, start_tansu
from arbiter_tools.devstack.processes import ManagedProcess, free_port
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack

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
    counts = figures.counts
    print("\n== chaos figures (tests run: " + ", ".join(figures.tests) + ")")
    print(f"faults injected:    {data['faults_injected']}  ({kinds}; killed: {killed})")
    print(f"poison:             {counts.poison_records} records on {counts.poison_topics} topics (every one set aside "
          "by every group that reads it, or a difference below)")
    print(f"watchers:           {counts.watchers} in {counts.watcher_crowds} crowds; streams asked "
          f"{counts.watch_streams_asked}, served {counts.watch_streams_served}, refused (RESOURCE_EXHAUSTED) "
          f"{counts.watch_refused}, broken {counts.watch_broken}; changes read {counts.watch_changes}")
    print(f"events redelivered: {data['events_redelivered']}  (in order, fresh consumer groups: "
          f"{data['events_redelivered_in_order']}; out of order, shuffled replay: "
          f"{data['events_redelivered_out_of_order']})")
    print(f"differences found:  {data['differences_found']}")
    for test, found in figures.differences.items():
        for line in found:
            print(f"  {test}: {line}")
    print(f"(written to {path})")


@dataclass
class ChaosInfra:
    """A system's own servers, for the faults: the broker, Redis and (when private) the PostgreSQL cluster."""

    stack: SystemStack
    redis: ManagedProcess
    redis_port: int
    postgres: PrivatePostgres | None = None

    @property
    def tansu(self) -> ManagedProcess:
        """The system's broker now (`kill_broker` starts a new process in the place of the lost one)."""
        tansu = self.stack.embedded("tansu")
        assert tansu is not None, "the system's tansu is adopted by its stack when it starts"
        return tansu


class Systems:
    """Systems started on a broker, a Redis and a database of their own; stopped by `close`."""

    def __init__(self, postgres_server_url: str, directory: Path) -> None:
        self.postgres_server_url = postgres_server_url
        self.directory = directory
        self.stacks: list[SystemStack] = []
        self.infra: list[ManagedProcess] = []
        self.clusters: list[PrivatePostgres] = []
        self.databases: list[str] = []

    def start(self, names: Iterable[str] = SERVICE_NAMES, *, time_scale: float = 60.0,
              extra_env: dict[str, str] | None = None, replicas: dict[str, int] | None = None,
              private_postgres: bool = False) -> SystemStack:
        """Start a system. Its database: by default one of its own on the session's server; with
        `private_postgres` a cluster of its own (initdb, pg_ctl), which counts no other system's
        connections and which a fault may stop and start."""
        n = len(self.stacks)
        kafka_port, redis_port = free_port(), free_port()
        tansu = start_tansu(kafka_port, self.directory / f"tansu-{n}.log")
        self.infra.append(tansu)
        redis = start_redis(redis_port, self.directory / f"redis-{n}" / "redis.log")
        self.infra.append(redis)
        cluster = None
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{kafka_port}",
               "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}
        database = f"arbiter_chaos_{uuid.uuid4().hex[:10]}"
        if private_postgres:
            # Not under tmp_path: pytest makes that root's alone, and the cluster runs as `postgres`.
            cluster = PrivatePostgres(Path(tempfile.mkdtemp(prefix="arbiter-chaos-pg-")))
            self.clusters.append(cluster)
            env["DATABASE_URL"] = asyncio.run(create_database(cluster.init().url, database))
        else:
            env["DATABASE_URL"] = asyncio.run(create_database(self.postgres_server_url, database))
            self.databases.append(database)
        stack = SystemStack(self.directory / f"system-{n}", time_scale=time_scale, free_ports=True, environ=env,
                            extra_env=dict(extra_env or {}), say=lambda _line: None,
                            replica_counts=dict(replicas or {}))
        stack.chaos_infra = ChaosInfra(stack, redis, redis_port, cluster)  # type: ignore[attr-defined]
        self.stacks.append(stack)
        stack.start_infrastructure()
        # The stack's own from now on, as `arbiter up`'s embedded one: a broker fault restarts it through the stack.
        stack.adopt_embedded(tansu)
        stack.start_services(names)
        stack.wait_serving(timeout=90, names=names)
        return stack

    def close(self) -> None:
        for stack in self.stacks:
            stack.stop()
        for process in self.infra:
            process.stop(signal.SIGINT if process.name == "tansu" else signal.SIGTERM)
        for cluster in self.clusters:  # the whole cluster goes, its databases with it
            cluster.close()
        # The machine's server outlives the suite, as for the test session's database (tests/conftest.py).
        if os.environ.get("ARBITER_KEEP_TEST_DATABASE") != "1":
            for database in self.databases:
                asyncio.run(drop_database(self.postgres_server_url, database))


@pytest.fixture
def own_system(postgres_server_url: str, tmp_path: Path) -> Iterator[Callable[..., SystemStack]]:
    """Start the services on a broker, a Redis and a database of their own (faults hurt nobody else).

    `own_system(time_scale=60)` returns the SystemStack (which holds the tansu, as its embedded one);
    `.chaos_infra` (a `ChaosInfra`) names the tansu and redis processes and their ports (to pause,
    flush or kill them), and with
    `private_postgres=True` the PostgreSQL cluster of its own (to restart it).
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
