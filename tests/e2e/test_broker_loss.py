"""A memory broker killed mid-run (issue 40): started again empty, the outboxes republished, and the
competition finishes.

The stack runs on an embedded tansu of its own. While a round robin is being played by the
simulator, `restart_broker` (what the chaos suite calls; `arbiter up`'s supervisor does the same,
tests/e2e/test_up_supervision.py) SIGKILLs tansu once the first results are in and the services
have read them, starts an empty broker on the same port and puts back every event the services had
published to the lost one; the services create their topics again and their consumers rejoin, the
play site publishes through the outage, and the tournament is played to its end. On main's code
the services never recovered and the tournament stayed stuck.

What a broker loss cannot bring back (README.md, "Losing the broker"): a play-site event published
but not yet read when the broker died. The test kills the broker once the consumers have caught
up, which is when an operator's loss costs nothing but the outage; the play site's own later
events are published again by it until the new broker takes them.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.timesource import TimeSource
from arbiter_tools.chaos import wait_caught_up
from arbiter_tools.devstack.stack import SystemStack
from arbiter_tools.devstack.supervisor import restart_broker
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.playsite import PlaySite, PlaySiteConfig, PlaySiteStats
from arbiter_tools.simulator.scenario import Addresses, Population, Scenario, ScenarioRunner, TournamentPlan
from tests.e2e.system_support import serving
from tests.support.polling import eventually

pytestmark = pytest.mark.timeout(420)

TIME_SCALE = 60.0


@pytest.fixture
def own_broker_system(infra_env: dict[str, str], own_database_url: str, tmp_path) -> Iterator[SystemStack]:
    """The five services on a tansu and a database of their own (the session's Redis).

    A database of its own: on the session's, the services would resume what earlier tests left
    running (live clocks to flag, rounds to pair), and `restart_broker` would publish all of that
    again, ahead of this tournament's events on the topics' one partition.
    """
    environ = {**os.environ, **infra_env, "DATABASE_URL": own_database_url}
    environ.pop("KAFKA_BOOTSTRAP_SERVERS")
    with serving(SystemStack(tmp_path / "system", time_scale=TIME_SCALE, free_ports=True, environ=environ,
                             say=lambda _line: None, auth=True)) as stack:
        yield stack


def test_a_killed_memory_broker_is_restarted_republished_and_the_tournament_finishes(own_broker_system) -> None:
    stack = own_broker_system
    runner, killed_after, republished, site = asyncio.run(_play_killing_the_broker(stack))
    part = runner.part("rr5")
    # Where it stood, and what the play site did, say which side stopped moving.
    assert part.status == "finished", (part.status, part.round, f"{part.games_done}/{part.games_total} games",
                                       runner.notes, _counts(site), republished)
    assert len([g for r in part.pairings for g in r.games if g.finished]) == 10
    assert killed_after >= 1
    # What pairing had published to the lost broker (the games it requested, at least) went out again.
    assert republished["pairing"][events.GAME_REQUESTED.name] >= killed_after, republished
    assert runner.wrongly_accepted == []


def _counts(site: PlaySiteStats) -> dict[str, int]:
    """The play site's counters (requested, started, finished, retries, losses, ...), without its timings."""
    return {name: value for name, value in vars(site).items() if isinstance(value, int)}


async def _play_killing_the_broker(
    stack: SystemStack,
) -> tuple[ScenarioRunner, int, dict[str, Counter[str]], PlaySiteStats]:
    """Play a round robin of 5, losing tansu once two results are in and read; the runner, the results then,
    the events republished and the play site's figures."""
    prefix = f"bl{datetime.now(UTC):%H%M%S}-"
    scenario = Scenario("e2e-broker-loss", tournaments=(TournamentPlan("rr5", "round robin of 5", 5),))
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    addresses = Addresses(pairing=stack.services["pairing"].grpc_address, arena=stack.services["arena"].grpc_address,
                          clock=stack.services["clock"].grpc_address, rating=stack.services["rating"].grpc_address,
                          auth_signing_key=stack.auth_signing_key)
    profiles = Profiles(seed=3)
    profiles.mix = {Behaviour.NORMAL: 1.0}
    playsite = PlaySite(stack.kafka_bootstrap, time_source, profiles, PlaySiteConfig(
        seed=3, think_seconds=(1.0, 3.0), group_id=f"playsite-{prefix}", player_prefix=prefix,
        arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock,
        auth_signing_key=addresses.auth_signing_key))
    finished: list[ev.GameFinished] = []
    playsite.on_finished.append(finished.append)
    population = Population.make(scenario.bots_needed, 0, 0, prefix=prefix)
    runner = ScenarioRunner(scenario, addresses, playsite, time_source, population=population, poll_seconds=0.5)
    await playsite.start()
    try:
        playing = asyncio.create_task(runner.run(300))
        await eventually(lambda: len(finished) >= 2 or playing.done(), "two results", timeout=120)
        assert len(finished) >= 2, ("the scenario ended without results", runner.notes)
        # Lost with the broker for good: a play-site event nobody had read yet (README.md).
        await wait_caught_up(stack.kafka_bootstrap, "pairing")
        killed_after = len(finished)
        republished = await asyncio.to_thread(restart_broker, stack)
        await playing
    finally:
        await playsite.stop()
    return runner, killed_after, republished, playsite.stats
