"""Keeping `arbiter up`'s children alive: a crashed service, lag exporter, broker or Redis is started again.

Each child that ends while the stack runs is restarted after a backoff (doubling from
`RESTART_BACKOFF_SECONDS` up to `MAX_RESTART_BACKOFF_SECONDS`, back to the start once it has run
`STABLE_SECONDS`), and the supervisor says so on the output and in `logs/supervisor.log`. An
embedded broker or Redis comes back empty on its port: the services create their topics again
(arbiter.kit.kafka.TopicKeeper) and rebuild Redis from PostgreSQL; after a broker restart the
outboxes' events published since the lost broker started are put back to be sent again
(arbiter.kit.outbox.republish). Every child's pid is kept in `pids/` under the state folder, so
that a later run finds what a killed one left behind and stops it (`clear_leftovers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from aiokafka.errors import KafkaError

from arbiter.kit.kafka import ensure_topics, kafka_security
from arbiter.kit.settings import KafkaSecuritySettings
from arbiter_tools.devstack.processes import ManagedProcess, wait_for_port
from arbiter_tools.devstack.replicas import SERVICE_DEFAULT_PARTITIONS
from arbiter_tools.devstack.republish import republish_all, republished_total
from arbiter_tools.devstack.stack import KAFKA_OPERATOR_USER, ServiceProcess, SystemStack

RESTART_BACKOFF_SECONDS = 1.0
MAX_RESTART_BACKOFF_SECONDS = 30.0
# A child that ran this long before it ended is restarted after the first backoff again.
STABLE_SECONDS = 60.0
# How often the children are looked at.
CHECK_SECONDS = 0.5


@dataclass
class Child:
    """One supervised process: how to find it now, and how to start it again."""

    name: str
    current: Callable[[], ManagedProcess | None]
    restart: Callable[[], ManagedProcess]
    started_at: float = field(default_factory=time.monotonic)
    started_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    restarts: int = 0
    backoff: float = RESTART_BACKOFF_SECONDS
    due: float | None = None


def pid_dir(state_dir: Path) -> Path:
    """Where the pid of every child of a run is kept while it runs."""
    return state_dir / "pids"


def write_pid_file(state_dir: Path, name: str, process: ManagedProcess) -> None:
    """Record `process` (pid and start time, so that a reused pid is never taken for it)."""
    folder = pid_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    created = psutil.Process(process.pid).create_time()
    (folder / f"{name}.pid").write_text(json.dumps({"pid": process.pid, "created": created,
                                                    "command": process.command[:3]}))


def clear_leftovers(state_dir: Path, say: Callable[[str], None] = print, timeout: float = 15.0) -> list[str]:
    """Stop the children a killed earlier run left running (their pid files, and its embedded PostgreSQL); say which.

    A pid file whose process has ended, or whose pid now belongs to another process (a different
    start time), is only removed.
    """
    stopped: list[str] = []
    for pid_file in sorted(pid_dir(state_dir).glob("*.pid")):
        try:
            recorded = json.loads(pid_file.read_text())
            process = psutil.Process(int(recorded["pid"]))
            if abs(process.create_time() - float(recorded["created"])) < 0.01:
                _stop_group(process, timeout)
                stopped.append(f"{pid_file.stem} (pid {process.pid})")
        except (psutil.NoSuchProcess, ValueError, KeyError, OSError):
            pass
        pid_file.unlink(missing_ok=True)
    postmaster = state_dir / "pg" / "postmaster.pid"
    if postmaster.exists():
        try:
            process = psutil.Process(int(postmaster.read_text().split()[0]))
            if "postgres" in process.name():
                # SIGINT is PostgreSQL's fast shutdown: it ends its sessions and stops cleanly.
                process.send_signal(signal.SIGINT)
                process.wait(timeout)
                stopped.append(f"postgresql (pid {process.pid})")
        except (psutil.NoSuchProcess, psutil.TimeoutExpired, ValueError, IndexError, OSError):
            pass
    if stopped:
        say(f"stopped what an earlier run left running: {', '.join(stopped)}")
    return stopped


def _stop_group(process: psutil.Process, timeout: float) -> None:
    """SIGINT the process group `process` leads (ManagedProcess starts each in its own), SIGKILL it after `timeout`."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout)
    except psutil.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout)
    except ProcessLookupError:
        pass


# The embedded servers, by the name their ManagedProcess has, and the option of their command that says
# where they listen.
EMBEDDED = {"tansu": "--listener-url", "kafka-gate": "--listen", "redis": "--port"}


def listening_address(process: ManagedProcess) -> tuple[str, int]:
    """Host and port an embedded server listens on, read from the command it was started with."""
    command = process.command
    where = command[command.index(EMBEDDED[process.name]) + 1]
    if process.name == "redis":
        return command[command.index("--bind") + 1], int(where)
    host, _, port = where.removeprefix("tcp://").rpartition(":")
    return host, int(port)


def restart_embedded(stack: SystemStack, name: str, down_seconds: float = 0.0) -> ManagedProcess:
    """SIGKILL the stack's embedded `tansu`, `kafka-gate` or `redis` if it still runs, and start it again on its port.

    tansu and Redis come back empty. For fault tests and the chaos suite (a memory broker lost for
    real, not paused, and left down `down_seconds`), and for the supervisor after a crash. Returns
    the new process, already accepting connections.
    """
    old = stack.embedded(name)
    if old is None:
        raise ValueError(f"this stack runs no embedded {name}")
    if not old.exited():
        old.kill()
    time.sleep(down_seconds)
    new = ManagedProcess(old.name, old.command, old.log_path, env=old.env, cwd=old.cwd).start()
    wait_for_port(*listening_address(new), 30, new)
    stack.replace_embedded(old, new)
    if name == "tansu":
        # At once, before retrying clients get there: tansu makes any topic a producer names, with
        # partitions of its own choosing, which its memory storage can then refuse batches on
        # (AlreadyExists) until the services' readiness checks make the topics again. Should this fail,
        # those checks make them a moment later. With as many partitions as the services make (their
        # default when the stack sets none: a broker it was given).
        with contextlib.suppress(KafkaError, OSError, TimeoutError):
            asyncio.run(ensure_topics(stack.kafka_bootstrap, int(stack.kafka_partitions or SERVICE_DEFAULT_PARTITIONS),
                                      security=_operator_security(stack.kafka_env(KAFKA_OPERATOR_USER))))
    return new


def _operator_security(env: dict[str, str]) -> dict[str, Any]:
    """aiokafka's keyword arguments for the credentials in `env` (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*)."""
    if not env:
        return {}
    return kafka_security(KafkaSecuritySettings.model_validate({name.lower(): value for name, value in env.items()}))


def started_at(process: ManagedProcess) -> datetime:
    """When a running child started (what a memory broker holds was published since)."""
    return datetime.fromtimestamp(psutil.Process(process.pid).create_time(), UTC)


def restart_broker(stack: SystemStack, republish: bool = True, down_seconds: float = 0.0) -> dict[str, Counter[str]]:
    """Lose the stack's embedded tansu for real and recover as `arbiter up` does; the events put back by service.

    SIGKILLs it, leaves it down `down_seconds`, starts an empty one on the same port (the services
    make their topics again) and, with `republish`, puts back into the outboxes everything they
    published since the lost broker started (arbiter.kit.outbox.republish), for their relays to
    publish again. For the chaos suite.
    """
    tansu = stack.embedded("tansu")
    if tansu is None:
        raise ValueError("this stack runs no embedded tansu")
    since = started_at(tansu)
    restart_embedded(stack, "tansu", down_seconds)
    return asyncio.run(republish_all(stack.database_url, since)) if republish else {}


class Supervisor:
    """Restarts the children of `stack` that end, with backoff, until stopped; one thread of its own."""

    def __init__(self, stack: SystemStack, say: Callable[[str], None] = print) -> None:
        self.stack = stack
        self.say = say
        self.children: list[Child] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.log_path = stack.log_dir / "supervisor.log"

    def _children(self) -> list[Child]:
        stack = self.stack
        children = [Child(name, partial(stack.embedded, name), partial(restart_embedded, stack, name))
                    for name in EMBEDDED if stack.embedded(name) is not None]
        if stack.lag_exporter is not None:
            children.append(Child("lag-exporter", lambda: stack.lag_exporter, self._restart_lag_exporter))
        children += [Child(replica.label, partial(self._replica_process, replica),
                           partial(stack.start_service, name, replica.replica))
                     for name in stack.services for replica in stack.replicas_of(name)]
        children += [Child(server.label, partial(self._replica_process, server),
                           partial(stack.start_watch_server, name))
                     for name, server in stack.watch_servers.items()]
        for child in children:
            process = child.current()
            if process is not None and process.popen is not None and not process.exited():
                child.started_wall = started_at(process)
        return children

    @staticmethod
    def _replica_process(replica: ServiceProcess) -> ManagedProcess | None:
        return replica.process

    def _restart_lag_exporter(self) -> ManagedProcess:
        old = self.stack.lag_exporter
        assert old is not None
        self.stack.lag_exporter = ManagedProcess(old.name, old.command, old.log_path, env=old.env).start()
        return self.stack.lag_exporter

    def record_pids(self) -> None:
        """Write every child's pid file (`clear_leftovers` of a later run reads them)."""
        for child in self.children:
            process = child.current()
            if process is not None and process.popen is not None:
                write_pid_file(self.stack.state_dir, child.name, process)

    def check_once(self, now: float | None = None) -> list[str]:
        """Schedule the restart of each child that ended, restart those whose backoff is over; return their names."""
        now = time.monotonic() if now is None else now
        restarted = []
        for child in self.children:
            process = child.current()
            if process is None or not process.exited():
                continue
            if child.due is None:
                ran = now - child.started_at
                child.backoff = RESTART_BACKOFF_SECONDS if ran >= STABLE_SECONDS else child.backoff
                child.due = now + child.backoff
                self._tell(f"{child.name} exited with {process.returncode()}; restarting it in {child.backoff:g} s",
                           child=child.name, code=process.returncode(), backoff_seconds=child.backoff)
                continue
            if now < child.due:
                continue
            lost_since = child.started_wall
            try:
                new = child.restart()
            except (OSError, RuntimeError, TimeoutError) as error:
                child.backoff = min(child.backoff * 2, MAX_RESTART_BACKOFF_SECONDS)
                child.due = now + child.backoff
                self._tell(f"{child.name} did not start again ({error}); next try in {child.backoff:g} s",
                           child=child.name, error=str(error), backoff_seconds=child.backoff)
                continue
            child.restarts += 1
            child.started_at, child.started_wall, child.due = time.monotonic(), datetime.now(UTC), None
            child.backoff = min(child.backoff * 2, MAX_RESTART_BACKOFF_SECONDS)
            write_pid_file(self.stack.state_dir, child.name, new)
            self._tell(f"{child.name} restarted (pid {new.pid}, restart {child.restarts})",
                       child=child.name, pid=new.pid, restarts=child.restarts)
            restarted.append(child.name)
            if child.name == "tansu" and self.stack.database_url:
                self._republish(lost_since)
        return restarted

    def _republish(self, since: datetime) -> None:
        """Put back what the outboxes published to the lost broker since it started, to be sent again."""
        try:
            counts = asyncio.run(republish_all(self.stack.database_url, since))
        except OSError as error:
            self._tell(f"could not republish after the broker restart: {error}", error=str(error))
            return
        total = republished_total(counts)
        self._tell(f"republishing {total} events the lost broker held (published since {since:%H:%M:%S} UTC)",
                   republished=counts, since=since.isoformat())

    def _tell(self, line: str, **fields: object) -> None:
        self.say(f"supervisor: {line}")
        entry = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "level": "warning",
                 "service": "supervisor", "msg": line, **fields}
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry, default=str) + "\n")

    def _run(self) -> None:
        while not self._stop.wait(CHECK_SECONDS):
            try:
                self.check_once()
            except Exception as error:  # a supervisor that dies silently would restart nothing again
                self._tell(f"supervision failed this time ({error!r}); trying again", error=repr(error))

    def start(self) -> None:
        """Record every child's pid and start supervising them in a thread of its own."""
        self.children = self._children()
        self.record_pids()
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop supervising (before the stack stops its children, or they would be restarted) and drop the pid files."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for pid_file in pid_dir(self.stack.state_dir).glob("*.pid"):
            pid_file.unlink(missing_ok=True)
