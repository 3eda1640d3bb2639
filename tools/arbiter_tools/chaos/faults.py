"""Faults for the chaos suite: service kills, pauses, Redis flushed or killed, PostgreSQL stormed or
restarted, the broker killed, poison records.

Everything here acts on a running `SystemStack` or on the infrastructure it uses, and counts
what it did in `FaultCounts`, so that a suite can print its figures at the end.

    driver = KillDriver(stack, every=(3.0, 6.0), seed=7)
    driver.start()            # a background thread: SIGKILL a random service, restart it, repeat
    ...                       # play a scenario
    driver.stop()             # every killed service is running again when this returns
    driver.counts.kills       # faults injected

`suspend` / `resume` / `paused` (SIGSTOP / SIGCONT of a process group), `flush_redis`,
`connection_storm` (hundreds of PostgreSQL connections held open), `kill_redis` (SIGKILL, then started
again empty on the same port), `kill_broker` (the same, then the outboxes republished),
`restart_postgres` (a `PrivatePostgres` cluster stopped and started), `poison_every_consumed_topic`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import redis

from arbiter_tools.devstack.processes import ManagedProcess, free_port, kill_and_restart
from arbiter_tools.devstack.republish import republished_total
from arbiter_tools.devstack.stack import SERVICE_GROUPS, SERVICE_NAMES, SystemStack
from arbiter_tools.devstack.supervisor import restart_broker
from arbiter_tools.poison import PoisonRecord, publish_poison


@dataclass
class FaultCounts:
    """What was injected, for the suite's figures."""

    kills: int = 0
    restarts: int = 0
    pauses: int = 0
    paused_seconds: float = 0.0
    redis_flushes: int = 0
    connection_storms: int = 0
    storm_connections: int = 0
    storm_refused: int = 0
    rewinds: int = 0
    # In order: fresh consumer groups (`redeliver_in_order`) or an offset rewind (`rewind_group`);
    # out of order: a shuffled replay (`replay_shuffled`).
    events_redelivered: int = 0
    replays: int = 0
    events_replayed_out_of_order: int = 0
    killed: dict[str, int] = field(default_factory=dict)
    redis_kills: int = 0
    postgres_restarts: int = 0
    broker_kills: int = 0
    # Events the outboxes had published to a broker that was then lost, put back to be sent again.
    events_republished: int = 0
    # Poison records published (one of each kind on every consumed topic), and their topics.
    poison_records: int = 0
    poison_topics: int = 0
    # Watch streams: crowds held, streams asked for (first tries and reopenings), served (snapshot
    # in), refused (RESOURCE_EXHAUSTED), broken (any other error: a service killed), changes read.
    watcher_crowds: int = 0
    watchers: int = 0
    watch_streams_asked: int = 0
    watch_streams_served: int = 0
    watch_refused: int = 0
    watch_broken: int = 0
    watch_changes: int = 0

    @property
    def faults(self) -> int:
        """Faults injected, all kinds together."""
        return sum(self.by_kind().values())

    def by_kind(self) -> dict[str, int]:
        """Faults injected per kind (a rewind or a replay counts once, whatever it redelivered)."""
        return {"service_kills": self.kills, "broker_pauses": self.pauses, "broker_kills": self.broker_kills,
                "redis_flushes": self.redis_flushes, "redis_kills": self.redis_kills,
                "postgres_storms": self.connection_storms, "postgres_restarts": self.postgres_restarts,
                "poison_records": self.poison_records, "watcher_crowds": self.watcher_crowds,
                "in_order_redeliveries": self.rewinds, "shuffled_replays": self.replays}

    def add(self, other: FaultCounts) -> None:
        """Add `other`'s counts to these."""
        for name, value in asdict(other).items():
            if name == "killed":
                for service, n in value.items():
                    self.killed[service] = self.killed.get(service, 0) + n
            else:
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, with the total."""
        return {"faults": self.faults, "by_kind": self.by_kind(), **asdict(self)}


class KillDriver:
    """Every `every` seconds (uniform, seeded) SIGKILL a service of `stack` and restart it.

    The first kills take every service once, in a seeded order, so that each (the clock included)
    is killed whatever the seed and however few kills the run has room for; later ones pick at
    random. `unkilled` names those not killed yet. Runs in a thread (the stack's calls block).
    A killed service stays down `down` seconds (uniform) before it is started again. With
    `wait=True` the driver then waits until it is SERVING before the next kill; with `wait=False`
    it does not (a service may be killed again while it starts). `stop()` returns when every service serves again.
    """

    def __init__(self, stack: SystemStack, *, every: tuple[float, float] = (3.0, 6.0), seed: int = 1,
                 names: Sequence[str] | None = None, down: tuple[float, float] = (0.0, 1.0),
                 serving_timeout: float = 60.0, wait: bool = True) -> None:
        self.stack = stack
        self.wait = wait
        self.every = every
        self.down = down
        self.rng = random.Random(seed)
        self.names = list(names or [n for n in SERVICE_NAMES if n in stack.services])
        # Its own generator: the kills after the first round draw from `rng` as they always did.
        self._first_round = random.Random(f"first-round-{seed}").sample(self.names, len(self.names))
        self.serving_timeout = serving_timeout
        self.counts = FaultCounts()
        self.log: list[tuple[float, str]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> KillDriver:
        """Start killing in the background."""
        self._thread = threading.Thread(target=self._loop, name="chaos-kill-driver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop killing; returns when the last killed service is running again."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.serving_timeout + 30)
        try:
            self.stack.wait_serving(timeout=self.serving_timeout, names=self.names)
        except Exception as error:
            self.errors.append(f"not serving after the faults: {type(error).__name__}: {error}")

    def kill_one(self, name: str | None = None) -> str:
        """SIGKILL one service (the next unkilled, or random, unless named), restart it; return its name."""
        if name is None:
            name = self._first_round.pop(0) if self._first_round else self.rng.choice(self.names)
        elif name in self._first_round:
            self._first_round.remove(name)
        started = time.monotonic()
        self.stack.kill_service(name)
        self.counts.kills += 1
        self.counts.killed[name] = self.counts.killed.get(name, 0) + 1
        time.sleep(self.rng.uniform(*self.down))
        self.stack.start_service(name)
        self.counts.restarts += 1
        if self.wait:
            self.stack.wait_serving(timeout=self.serving_timeout, names=[name])
            self.log.append(
                (time.monotonic(), f"killed {name}, serving again after {time.monotonic() - started:.1f} s")
            )
        else:
            self.log.append((time.monotonic(), f"killed {name}, restarted"))
        return name

    @property
    def unkilled(self) -> list[str]:
        """Services this driver has not killed yet."""
        return [name for name in self.names if name not in self.counts.killed]

    def _loop(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.every)):
            try:
                self.kill_one()
            except Exception as error:  # a service that does not come back is a finding, not a crash here
                self.errors.append(f"{type(error).__name__}: {error}")


# -- SIGSTOP / SIGCONT --------------------------------------------------------------------


def suspend(process: ManagedProcess) -> None:
    """SIGSTOP the process group of `process`."""
    os.killpg(process.pid, signal.SIGSTOP)


def resume(process: ManagedProcess) -> None:
    """SIGCONT the process group of `process`."""
    os.killpg(process.pid, signal.SIGCONT)


@contextlib.contextmanager
def paused(process: ManagedProcess, counts: FaultCounts | None = None) -> Iterator[None]:
    """SIGSTOP `process` for the body of the with-block, SIGCONT after (also on errors)."""
    started = time.monotonic()
    suspend(process)
    try:
        yield
    finally:
        resume(process)
        if counts is not None:
            counts.pauses += 1
            counts.paused_seconds += time.monotonic() - started


# -- Redis, PostgreSQL ----------------------------------------------------------------------


def flush_redis(url: str, counts: FaultCounts | None = None) -> None:
    """FLUSHALL: every key of every database of the server at `url` is gone."""
    client = redis.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()
    if counts is not None:
        counts.redis_flushes += 1


async def connection_storm(database_url: str, connections: int = 300, hold_seconds: float = 3.0,
                           counts: FaultCounts | None = None) -> tuple[int, int]:
    """Open `connections` PostgreSQL connections at once and hold them; return (opened, refused).

    Past the server's max_connections the rest are refused ("too many clients"), and so is
    every service that needs a new connection meanwhile: that is the fault.
    """

    async def one() -> asyncpg.Connection | None:
        try:
            return await asyncpg.connect(database_url, timeout=10)
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return None

    opened = [c for c in await asyncio.gather(*(one() for _ in range(connections))) if c is not None]
    try:
        # Keep them busy, not just open.
        await asyncio.gather(*(c.execute("SELECT pg_sleep($1)", hold_seconds) for c in opened),
                             return_exceptions=True)
    finally:
        await asyncio.gather(*(c.close() for c in opened), return_exceptions=True)
    refused = connections - len(opened)
    if counts is not None:
        counts.connection_storms += 1
        counts.storm_connections += len(opened)
        counts.storm_refused += refused
    return len(opened), refused


# -- servers lost and back: Redis and the broker empty, PostgreSQL restarted ----------------------


def kill_redis(process: ManagedProcess, port: int, down_seconds: float = 2.0,
               counts: FaultCounts | None = None) -> None:
    """SIGKILL the system's own redis-server and start it again, empty (it keeps nothing on disk)."""
    kill_and_restart(process, port, down_seconds)
    if counts is not None:
        counts.redis_kills += 1


def kill_broker(stack: SystemStack, down_seconds: float = 2.0, counts: FaultCounts | None = None) -> int:
    """SIGKILL the system's own tansu, start it again on the same port and recover as `arbiter up` does; return
    how many published events were put back in the outboxes.

    Memory storage: every topic, record and committed offset is gone. The services make their topics
    again, and everything their outboxes published since the lost broker started is sent again
    (`restart_broker`); the tansu must be the stack's (`SystemStack.adopt_embedded` for one started
    beside it).
    """
    republished = restart_broker(stack, republish=True, down_seconds=down_seconds)
    total = republished_total(republished)
    if counts is not None:
        counts.broker_kills += 1
        counts.events_republished += total
    return total


def _as_postgres(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: as the `postgres` OS user then.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PrivatePostgres:
    """A PostgreSQL cluster of the chaos run's own (initdb + pg_ctl in `directory`, on a free port),
    which a fault may stop and start for real without touching the machine's server."""

    def __init__(self, directory: Path, bin_dir: Path | None = None, max_connections: int = 200,
                 durable: bool = False, settings: Mapping[str, str] | None = None) -> None:
        self.directory = directory
        self.bin_dir = bin_dir or postgres_bin_dir()
        self.max_connections = max_connections
        # A chaos run wants speed (fsync off); a benchmark wants the commits a deployment pays for.
        self.durable = durable
        self.settings = dict(settings or {})
        self.port = free_port()
        self.data = directory / "data"
        self.log_path = directory / "postgres.log"

    @property
    def url(self) -> str:
        """The server's `postgres` database (trust authentication, local connections only)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run(_as_postgres([str(self.bin_dir / args[0]), *args[1:]]), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def init(self) -> PrivatePostgres:
        """Create the cluster (owned by `postgres` when we are root) and start it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        return self.start()

    def start(self) -> PrivatePostgres:
        """Start the server and wait until it accepts connections."""
        settings = {"fsync": "on" if self.durable else "off", "max_connections": str(self.max_connections),
                    **self.settings}
        options = " ".join([f"-p {self.port} -h 127.0.0.1 -k {self.directory}",
                            *(f"-c {name}={value}" for name, value in settings.items())])
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log_path), "-o", options, "-w", "-t", "60", "start")
        return self

    @property
    def pid(self) -> int:
        """The running server's (postmaster's) process id."""
        return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`fast`: every session ended, a clean shutdown; `immediate`: as a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def close(self) -> None:
        """Stop the server if it runs and remove the cluster."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


def postgres_bin_dir(root: Path = Path("/usr/lib/postgresql")) -> Path:
    """The newest installed PostgreSQL's bin directory (initdb, pg_ctl)."""
    found = sorted((p for p in root.glob("*/bin") if (p / "pg_ctl").exists()),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not found:
        raise FileNotFoundError(f"no PostgreSQL with initdb and pg_ctl under {root}")
    return found[-1]


def restart_postgres(cluster: PrivatePostgres, down_seconds: float = 3.0, mode: str = "immediate",
                     counts: FaultCounts | None = None) -> None:
    """Stop the cluster (`immediate`: as a crash, no checkpoint), leave it down, start it again."""
    cluster.stop(mode)
    time.sleep(down_seconds)
    cluster.start()
    if counts is not None:
        counts.postgres_restarts += 1


# -- poison -----------------------------------------------------------------------------------------


def consumed_topics() -> list[str]:
    """Every topic some service consumes (SERVICE_GROUPS), sorted."""
    return sorted({t for groups in SERVICE_GROUPS.values() for topics in groups.values() for t in topics})


async def poison_every_consumed_topic(bootstrap: str, tag: str,
                                      counts: FaultCounts | None = None) -> dict[str, list[PoisonRecord]]:
    """One poison record of each kind (arbiter_tools.poison) on every consumed topic; return them by topic.

    `tag` is in every record's key and value, so that `set_aside_differences` finds them.
    """
    published = {topic: await publish_poison(bootstrap, topic, tag=f"{tag}-{topic}") for topic in consumed_topics()}
    if counts is not None:
        counts.poison_topics += len(published)
        counts.poison_records += sum(len(records) for records in published.values())
    return published
