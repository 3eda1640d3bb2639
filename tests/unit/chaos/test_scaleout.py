"""The scale-out run's checks: one owner per arena at every moment (from the replicas' logs), connection budgets."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from arbiter_tools.chaos.scaleout import (
    LEASE_LOST,
    PAIRING_STARTED,
    ConnectionPeaks,
    ConnectionSampler,
    Ownership,
    ReplicaKill,
    arena_ownerships,
    connection_differences,
    partition_assignments,
    shared_ownerships,
)

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def write_log(path: Path, lines: list[tuple[float, str, str]]) -> Path:
    entries = [json.dumps({"ts": at(s).isoformat(timespec="milliseconds"), "level": "info", "service": "arena",
                           "msg": msg, "arena_id": arena}) for s, msg, arena in lines]
    path.write_text("\n".join([*entries, '{"ts": "cut by a ki']) + "\n")  # the last line cut by a kill
    return path


def test_a_killed_owner_ends_its_spans_at_the_kill_and_the_next_owner_starts_after(tmp_path: Path) -> None:
    logs = {"arena": write_log(tmp_path / "arena.log", [(1, PAIRING_STARTED, "a1"), (2, PAIRING_STARTED, "a2"),
                                                        (9, PAIRING_STARTED, "a1")]),
            "arena-2": write_log(tmp_path / "arena-2.log", [(6, PAIRING_STARTED, "a1"), (6.5, PAIRING_STARTED, "a2"),
                                                            (8.5, LEASE_LOST, "a1")])}
    spans = arena_ownerships(logs, [ReplicaKill("arena", at(5))])
    assert sorted(spans, key=lambda s: (s.arena_id, s.start)) == [
        Ownership("a1", "arena", at(1), at(5)), Ownership("a1", "arena-2", at(6), at(8.5)),
        Ownership("a1", "arena", at(9), None),
        Ownership("a2", "arena", at(2), at(5)), Ownership("a2", "arena-2", at(6.5), None)]
    assert shared_ownerships(spans) == []


def test_two_replicas_pairing_one_arena_at_one_moment_are_found(tmp_path: Path) -> None:
    logs = {"arena": write_log(tmp_path / "arena.log", [(1, PAIRING_STARTED, "a1"), (7, LEASE_LOST, "a1")]),
            "arena-2": write_log(tmp_path / "arena-2.log", [(5, PAIRING_STARTED, "a1")])}
    (found,) = shared_ownerships(arena_ownerships(logs, []))
    assert found.startswith("arena a1: arena from 12:00:01") and "arena-2 from 12:00:05" in found


@given(st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.integers(0, 100), st.integers(1, 20)), max_size=8))
def test_spans_of_one_replica_never_count_as_two_owners(raw: list[tuple[str, int, int]]) -> None:
    spans = [Ownership("a", replica, at(start), at(start + length)) for replica, start, length in raw]
    owners_at = [{s.replica for s in spans if s.start <= at(t + 0.5) < (s.end or at(1e9))} for t in range(130)]
    assert bool(shared_ownerships(spans)) == any(len(owners) > 1 for owners in owners_at)


def test_connection_peaks_per_replica_system_and_server() -> None:
    sampler = ConnectionSampler("postgresql://unused")
    sampler._add([{"ours": True, "application_name": "arbiter-clock/clock-2"}] * 3
                 + [{"ours": True, "application_name": "arbiter-clock/clock"}] * 2
                 + [{"ours": False, "application_name": "arbiter-clock/clock"}] * 7
                 + [{"ours": True, "application_name": "psql"}])
    sampler._add([{"ours": True, "application_name": "arbiter-clock/clock"}] * 4)
    peaks = sampler.peaks
    assert (peaks.per_replica, peaks.system, peaks.server, peaks.samples) == (
        {"clock/clock-2": 3, "clock/clock": 4}, 5, 13, 2)


def test_a_replica_over_its_pool_or_a_system_without_headroom_is_a_difference() -> None:
    peaks = ConnectionPeaks(max_connections=100, reserved=3, per_replica={"clock/clock": 6, "rating/rating": 5},
                            system=11, server=90, samples=10)
    assert connection_differences(peaks, pool_max=5) == [
        "clock/clock held 6 PostgreSQL connections at once, over DB_POOL_MAX 5"]
    crowded = ConnectionPeaks(100, 3, {"clock/clock": 5}, system=80, server=80, samples=1)
    assert connection_differences(crowded, pool_max=5) == [
        "the system held 80 connections at once, over 80% of the 97 the server lets clients open"]


def test_partition_assignments_are_counted_from_the_consumers_logs(tmp_path: Path) -> None:
    (tmp_path / "clock.log").write_text(
        "Consumer c1 assigned to partitions: (TopicPartition(topic='game.finished', partition=0),)\n"
        "Heartbeat failed for group clock.lifecycle because it is rebalancing\n"
        "Consumer c1 assigned to partitions: (TopicPartition(topic='game.finished', partition=1),)\n")
    (tmp_path / "clock-2.log").write_text("Consumer c2 assigned to partitions: ()\n")
    assert partition_assignments(sorted(tmp_path.glob("*.log"))) == 3
