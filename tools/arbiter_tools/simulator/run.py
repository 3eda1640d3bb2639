"""Run a scenario end to end: start the play site, play, print the live view and the final tables."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from arbiter.kit.timesource import TimeSource
from arbiter_tools.simulator.behaviour import Profiles
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import Addresses, Population, Scenario, ScenarioRunner
from arbiter_tools.simulator.view import final_tables, live_view


@dataclass(frozen=True)
class RunOptions:
    """How to run a scenario."""

    seed: int = 1
    think_seconds: tuple[float, float] = (1.0, 4.0)
    timeout: float = 600.0
    live: bool = True
    bots: int = 0
    # The play site's consumer group; empty: `<prefix>playsite`. Each run needs one of its own: runs
    # sharing a group split the partitions, and each then misses the games the other was handed.
    group_id: str = ""
    # Prefix of account ids, so that two runs on one system do not share players.
    prefix: str = ""
    # Lines about the system itself for the live view (e.g. which replicas are up), asked at each redraw.
    system_lines: Callable[[], list[str]] | None = None


async def run_scenario(
    scenario: Scenario, addresses: Addresses, bootstrap_servers: str, time_source: TimeSource,
    options: RunOptions = RunOptions(), out: TextIO | None = None,
) -> tuple[dict[str, Any], ScenarioRunner]:
    """Start a play site, play `scenario` to its end, stop; return the report and the runner."""
    out = out if out is not None else sys.stdout
    config = PlaySiteConfig(
        seed=options.seed, think_seconds=options.think_seconds,
        group_id=options.group_id or f"{options.prefix}playsite",
        player_prefix=options.prefix,
        arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock,
        auth_signing_key=addresses.auth_signing_key,
    )
    playsite = PlaySite(bootstrap_servers, time_source, Profiles(seed=options.seed), config)
    population = Population.make(max(options.bots, scenario.bots_needed), scenario.guests, scenario.computers,
                                 prefix=options.prefix)
    runner = ScenarioRunner(scenario, addresses, playsite, time_source, population=population,
                            say=lambda line: print(line, file=out))
    await playsite.start()
    view: asyncio.Task[None] | None = None
    finished = asyncio.Event()
    try:
        if options.live:
            view = asyncio.create_task(live_view(runner, finished.is_set, out, system_lines=options.system_lines))
        await runner.run(options.timeout)
    finally:
        finished.set()
        if view is not None:
            await view
        await playsite.stop()
    return runner.report(), runner


def print_final(runner: ScenarioRunner, out: TextIO | None = None) -> None:
    """Print the final tables."""
    out = out if out is not None else sys.stdout
    print(final_tables(runner, colour=out.isatty()), file=out)


def quiet_client_logs() -> None:
    """Keep the Kafka client's rebalance chatter out of the live view (warnings and worse go to stderr)."""
    import logging

    for name in ("aiokafka", "faststream", "arbiter.playsite.kafka", "arbiter.kit.kafka"):
        logging.getLogger(name).setLevel(logging.ERROR)
