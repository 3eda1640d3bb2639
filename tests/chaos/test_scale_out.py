"""Issue 44: the seeded scenario on two replicas of every service and four partitions, replicas killed throughout.

Run with `make chaos`. It is played twice, each on a broker, Redis and database of its own: once
undisturbed with one replica of each service, then on two replicas of each while
`ReplicaKillDriver` SIGKILLs a replica every CHAOS_SCALED_KILL_EVERY seconds (1 to 3) once everyone
has joined, each of the ten once before any twice and never the last serving one of its service,
and restarts it: every kill makes the service's consumer groups hand the killed member's
partitions to the survivor, and its restart hands some back.
Both runs have four partitions per topic and DB_POOL_MAX 5 (deploy/k8s's), so only the
replicas and the kills differ.

Identical to the undisturbed run, as in the kill test (test_chaos.py): the standings, every
round's pairings and colours, every result and the Swiss entrants' ratings; and every invariant of
`check` (no game requested twice, no player in two games, outcomes equal to the pure rules'
recomputation from the recorded events).

One owner per arena at every moment: each arena replica logs "pairing arena" when it starts
pairing an arena and "arena lease lost to another replica" when it finds its lease taken; with
the driver's kill instants, those give the spans in which each replica paired each arena
(`arena_ownerships`), and no two replicas' spans of one arena may overlap (`shared_ownerships`).

Connection budgets: each run has an embedded PostgreSQL of its own (the machine's server is
shared: other systems' clients once took all of its connections, and a replica restarted then
could not start), sampled (pg_stat_activity) every half second through the disturbed run; each
replica names its connections `arbiter-<service>/<REPLICA_ID>`. No replica may hold more than
DB_POOL_MAX at once, and the system no more than 80% of what the server lets clients open
(max_connections less the superuser-reserved ones).

Flags and rebalances: the clock's deadlines are shared (Redis). When a clock replica dies, its
partitions stay unread until its groups notice (KAFKA_SESSION_TIMEOUT_MS) and hand them over; the
first runs of this test saw the surviving replica abandon (T-19) arena games whose GameFinished
waited there. A clock replica now decides only the games whose partitions it holds and has read
up since it got them (services/clock/flags.py), with no transit allowance (FLAG_TRANSIT_SECONDS 0).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from arbiter_tools.chaos.scaleout import (
    ConnectionSampler,
    ReplicaKillDriver,
    arena_ownerships,
    connection_differences,
    partition_assignments,
    shared_ownerships,
)
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from tests.chaos.test_chaos import (
    KILL_TIME_SCALE,
    SEED,
    PatientRunner,
    check,
    everyone_joined,
    outcome_differences,
    outcome_of,
    play,
)

pytestmark = pytest.mark.timeout(2400)

REPLICAS = 2
PARTITIONS = 4
POOL_MAX = 5
SETTINGS = {
    "KAFKA_PARTITIONS": str(PARTITIONS), "DB_POOL_MAX": str(POOL_MAX),
    # A killed replica's partitions wait for its groups to notice (the session timeout): a short one
    # keeps each kill's pause short, so the scenario's play holds every kill.
    "KAFKA_SESSION_TIMEOUT_MS": "3000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500",
}
# Seconds between two kills (uniform): short enough that each of the ten replicas is killed once before
# any twice while the scenario still plays after everyone has joined.
SCALED_KILL_EVERY = tuple(float(x) for x in os.environ.get("CHAOS_SCALED_KILL_EVERY", "1,3").split(","))


def _say(name: str, started: float, problems: list[str], info: dict[str, Any]) -> None:
    print(f"\n[{name}] {time.monotonic() - started:.0f} s, {info}")
    for line in problems:
        print(f"  difference: {line}")


def test_two_replicas_of_everything_killed_throughout_end_as_one_replica_each(own_system, chaos_figures) -> None:
    started = time.monotonic()
    reference_stack = own_system(time_scale=KILL_TIME_SCALE, extra_env=SETTINGS, private_postgres=True)
    reference_runner = asyncio.run(play(reference_stack))
    reference_problems, reference_info = asyncio.run(check(reference_stack, reference_runner))
    reference = asyncio.run(outcome_of(reference_stack, reference_runner))
    _say("scale-out reference, one replica each", started, reference_problems, reference_info)
    reference_stack.stop()  # its figures are taken; the scaled system gets the machine to itself

    scaled_started = time.monotonic()
    stack: SystemStack = own_system(time_scale=KILL_TIME_SCALE, extra_env=SETTINGS, private_postgres=True,
                                    replicas=dict.fromkeys(SERVICE_NAMES, REPLICAS))
    driver = ReplicaKillDriver(stack, every=SCALED_KILL_EVERY, seed=SEED, serving_timeout=90)
    sampler = ConnectionSampler(stack.database_url)

    async def play_sampled() -> PatientRunner:
        async def kill_once_joined(runner: PatientRunner) -> None:
            # As in the kill test: calls retried past the start would find registration closed (T-6).
            await everyone_joined(stack, runner)
            driver.start()

        sampling = asyncio.create_task(sampler.run())
        try:
            return await play(stack, during=kill_once_joined)
        finally:
            await asyncio.to_thread(driver.stop)
            sampler.stop()
            await sampling

    runner = asyncio.run(play_sampled())
    problems, info = asyncio.run(check(stack, runner))
    problems += [f"driver: {error}" for error in driver.errors]
    problems += [f"reference run: {problem}" for problem in reference_problems]
    outcome = asyncio.run(outcome_of(stack, runner))
    problems += outcome_differences(reference, outcome)
    arena_logs = {replica.label: stack.log_dir / f"{replica.label}.log" for replica in stack.replicas_of("arena")}
    spans = arena_ownerships(arena_logs, driver.kills)
    problems += shared_ownerships(spans)
    problems += connection_differences(sampler.peaks, POOL_MAX)
    info.update({
        "replicas": REPLICAS, "partitions": PARTITIONS,
        "replicas_killed": dict(sorted(driver.counts.killed.items())),
        "kills_skipped_while_a_replica_started": driver.skipped,
        # Every start, kill and restart of a replica hands partitions over in its service's groups.
        "partition_assignments": partition_assignments(stack.log_dir.glob("*.log")),
        "arena_ownership_spans": len(spans),
        "arena_owners": sorted({span.replica for span in spans}),
        "postgresql_connections": sampler.peaks.as_dict(),
        "kill_log": [line for _at, line in driver.log],
        "seconds": round(time.monotonic() - scaled_started),
        "reference_seconds": round(scaled_started - started),
    })
    if outcome.rating_deltas:
        info["rating_max_abs_delta"] = max(outcome.rating_deltas.values())
    chaos_figures.record("scale-out", driver.counts, problems, **info)
    _say("scale-out, two replicas each, killed throughout", scaled_started, problems,
         {key: value for key, value in info.items() if key != "kill_log"})
    assert driver.counts.kills > 0
    assert reference.standings, "the reference run finished no tournament"
    assert spans, "no arena replica logged pairing an arena"
    assert info["partition_assignments"] > 2 * len(SERVICE_NAMES), "the consumer groups never rebalanced"
    assert not problems, problems
