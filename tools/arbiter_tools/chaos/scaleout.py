"""The scale-out run's means: replicas killed one at a time, who paired each arena when, PostgreSQL connections.

- `ReplicaKillDriver`: SIGKILLs a replica of a service whose replicas all serve (every replica
  once before any twice) and restarts it, so that each service keeps a replica up while its
  consumer groups rebalance around the kill; other services' replicas may be down meanwhile.
- `arena_ownerships` / `shared_ownerships`: from each arena replica's own log, the spans in
  which it paired each arena (from its "pairing arena" line to its "arena lease lost" line, or
  to its kill); two replicas' spans of one arena that overlap are two owners at one moment.
- `ConnectionSampler`: pg_stat_activity sampled through the run, per replica (the services
  name their connections `arbiter-<service>/<REPLICA_ID>`), for the system, and for the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from arbiter_tools.chaos.faults import KillDriver
from arbiter_tools.devstack.stack import ServiceProcess, SystemStack

# What the arena's matchmaker logs when a replica starts pairing an arena, and when it finds its lease taken.
PAIRING_STARTED = "pairing arena"
LEASE_LOST = "arena lease lost to another replica"


@dataclass(frozen=True)
class ReplicaKill:
    """One replica SIGKILLed, at a wall-clock instant (as the services stamp their log lines)."""

    label: str
    at: datetime


class ReplicaKillDriver(KillDriver):
    """KillDriver over replicas: never the last serving replica of a service, each once before any twice."""

    def __init__(self, stack: SystemStack, *, every: tuple[float, float] = (3.0, 6.0), seed: int = 1,
                 down: tuple[float, float] = (0.0, 1.0), serving_timeout: float = 90.0) -> None:
        super().__init__(stack, every=every, seed=seed, down=down, serving_timeout=serving_timeout, wait=False)
        self.kills: list[ReplicaKill] = []
        self.skipped = 0
        self._round: list[ServiceProcess] = []

    def _all_serving(self, service: str) -> bool:
        try:
            self.stack.wait_serving(timeout=0, names=[service])
        except (TimeoutError, RuntimeError):
            return False
        return True

    def _next_replica(self, name: str | None) -> ServiceProcess | None:
        if name is not None:
            return self.rng.choice(self.stack.replicas_of(name)) if self._all_serving(name) else None
        if not self._round:
            self._round = [replica for service in self.names for replica in self.stack.replicas_of(service)]
            self.rng.shuffle(self._round)
        for index, replica in enumerate(self._round):
            if self._all_serving(replica.name):
                return self._round.pop(index)
        return None

    def kill_one(self, name: str | None = None) -> str:
        """SIGKILL a replica (of `name` when given) whose service serves on all of them, restart it; its label.

        "" when every candidate's service still has a replica starting: nothing is killed this time.
        """
        target = self._next_replica(name)
        if target is None:
            self.skipped += 1
            return ""
        self.stack.kill_service(target.name, target.replica)
        self.kills.append(ReplicaKill(target.label, datetime.now(UTC)))
        self.counts.kills += 1
        self.counts.killed[target.label] = self.counts.killed.get(target.label, 0) + 1
        time.sleep(self.rng.uniform(*self.down))
        self.stack.start_service(target.name, target.replica)
        self.counts.restarts += 1
        self.log.append((time.monotonic(), f"killed {target.label}, restarted"))
        return target.label


# -- one owner per arena ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ownership:
    """A span in which one replica paired one arena; `end` None: it still did when its log was read."""

    arena_id: str
    replica: str
    start: datetime
    end: datetime | None


def _ownership_events(log: Path) -> list[tuple[datetime, str, str]]:
    """(instant, PAIRING_STARTED or LEASE_LOST, arena id) from one replica's log, every start of it included."""
    events = []
    for line in log.read_text(errors="replace").splitlines():
        if PAIRING_STARTED not in line and LEASE_LOST not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        if entry.get("msg") in (PAIRING_STARTED, LEASE_LOST) and entry.get("arena_id"):
            events.append((datetime.fromisoformat(entry["ts"]), entry["msg"], entry["arena_id"]))
    return events


def arena_ownerships(logs: Mapping[str, Path], kills: Iterable[ReplicaKill]) -> list[Ownership]:
    """Every span in which a replica paired an arena, from its log (`logs` by replica label) and its kills."""
    spans: list[Ownership] = []
    killed_at: dict[str, list[datetime]] = {}
    for kill in kills:
        killed_at.setdefault(kill.label, []).append(kill.at)
    for label, log in logs.items():
        # A kill ends every span of the process killed; sorted after a log line of the same instant.
        events = sorted([*_ownership_events(log), *((at, "", "") for at in killed_at.get(label, ()))],
                        key=lambda event: (event[0], event[1] == ""))
        held: dict[str, datetime] = {}
        for at, what, arena_id in events:
            # A kill ends every span; a lease lost, or a new start after a silent stop (the arena ended), one.
            for closed in (list(held) if not what else [arena_id] if arena_id in held else []):
                spans.append(Ownership(closed, label, held.pop(closed), at))
            if what == PAIRING_STARTED:
                held[arena_id] = at
        spans += [Ownership(arena_id, label, start, None) for arena_id, start in held.items()]
    return spans


def shared_ownerships(spans: Sequence[Ownership]) -> list[str]:
    """Every moment two replicas paired one arena, as differences (none when each arena had one owner at a time)."""
    far = datetime.max.replace(tzinfo=UTC)
    found = []
    by_arena: dict[str, list[Ownership]] = {}
    for span in spans:
        by_arena.setdefault(span.arena_id, []).append(span)
    for arena_id, held in sorted(by_arena.items()):
        held.sort(key=lambda span: span.start)
        for index, first in enumerate(held):
            for second in held[index + 1:]:
                if second.replica != first.replica and second.start < (first.end or far):
                    found.append(f"arena {arena_id}: {first.replica} from {first.start:%H:%M:%S.%f} to "
                                 f"{first.end or 'the end'} and {second.replica} from {second.start:%H:%M:%S.%f}")
    return found


def partition_assignments(logs: Iterable[Path]) -> int:
    """How many times a consumer of these logs was handed its partitions (aiokafka logs each assignment)."""
    return sum(log.read_text(errors="replace").count("assigned to partitions") for log in logs)


# -- PostgreSQL connections ---------------------------------------------------------------------


@dataclass
class ConnectionPeaks:
    """The most connections seen at once: per replica, for the system's services, for the whole server."""

    max_connections: int = 0
    reserved: int = 0
    per_replica: dict[str, int] = field(default_factory=dict)
    system: int = 0
    server: int = 0
    samples: int = 0

    @property
    def usable(self) -> int:
        """What clients other than superusers may open: max_connections less the reserved ones."""
        return self.max_connections - self.reserved

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the suite's figures."""
        return {"max_connections": self.max_connections, "superuser_reserved_connections": self.reserved,
                "samples": self.samples, "peak_system": self.system, "peak_server": self.server,
                "peak_per_replica": dict(sorted(self.per_replica.items()))}


class ConnectionSampler:
    """Samples pg_stat_activity every `every` seconds until stopped; `peaks` holds the most seen at once."""

    def __init__(self, database_url: str, every: float = 0.5) -> None:
        self.database_url = database_url
        self.every = every
        self.peaks = ConnectionPeaks()
        self._stop = asyncio.Event()

    async def run(self) -> ConnectionPeaks:
        """Sample until `stop()`; return the peaks."""
        connection = await asyncpg.connect(self.database_url)
        try:
            self.peaks.max_connections = int(await connection.fetchval("SHOW max_connections"))
            self.peaks.reserved = int(await connection.fetchval("SHOW superuser_reserved_connections"))
            while not self._stop.is_set():
                rows = await connection.fetch(
                    "SELECT datname = current_database() AS ours, application_name FROM pg_stat_activity"
                    " WHERE backend_type = 'client backend'")
                self._add(rows)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.every)
        finally:
            await connection.close()
        return self.peaks

    def stop(self) -> None:
        """End the sampling after the sample in hand."""
        self._stop.set()

    def _add(self, rows: Sequence[asyncpg.Record]) -> None:
        services = Counter(row["application_name"].removeprefix("arbiter-") for row in rows
                           if row["ours"] and row["application_name"].startswith("arbiter-"))
        peaks = self.peaks
        peaks.samples += 1
        peaks.server = max(peaks.server, len(rows))
        peaks.system = max(peaks.system, sum(services.values()))
        for replica, held in services.items():
            peaks.per_replica[replica] = max(peaks.per_replica.get(replica, 0), held)


def connection_differences(peaks: ConnectionPeaks, pool_max: int, headroom: float = 0.8) -> list[str]:
    """A replica over its pool, or the system's peak above `headroom` of what the server lets clients open.

    The server's own peak (every database, other systems' clients too) is reported, not judged here:
    on a shared server it says more about the neighbours than about this system.
    """
    found = [f"{replica} held {held} PostgreSQL connections at once, over DB_POOL_MAX {pool_max}"
             for replica, held in sorted(peaks.per_replica.items()) if held > pool_max]
    if peaks.system > headroom * peaks.usable:
        found.append(f"the system held {peaks.system} connections at once, over {headroom:.0%} of the "
                     f"{peaks.usable} the server lets clients open")
    if not peaks.samples:
        found.append("pg_stat_activity was never sampled")
    return found
