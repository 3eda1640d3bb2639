"""Every Grafana dashboard query, evaluated by a real Prometheus scraping the whole system at play.

Debian's `prometheus` (`make tools` installs it; the test fails, never skips, without it) scrapes
the five services and the lag exporter (the broker's view of the consumer groups, which the lag
panels read) every second, with the alert rules of deploy/prometheus/alerts.yml loaded,
while the simulator plays a round robin, an arena and a Triple Block game (and a tournament too small
to start cancels itself) and a client holds a Watch stream open. Then every query of
deploy/grafana/dashboards/*.json (template variables set to "All", `$__rate_interval` as Grafana
sets it for a 1 s scrape) runs as Grafana runs it,
a range query over the play: none may fail, and none may come back without a series, apart from
queries of rare events that say `or vector(0)` (there are none today: every labelled counter
and histogram starts at zero). The alert rules must evaluate without an error on the same data.
The figures (queries, errors, empty, NaN-only) are printed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from arbiter_tools.simulator.behaviour import Profiles
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import (
    Addresses,
    ArenaPlan,
    Population,
    Scenario,
    ScenarioRunner,
    TournamentPlan,
    TripleBlockPlan,
)
from tests.e2e.prometheus_support import ALERT_RULES, Prometheus, QueryError

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "deploy" / "grafana" / "dashboards"
TIME_SCALE = 60.0
SCRAPE_SECONDS = 1  # prometheus_support's scrape and evaluation interval
# Grafana's $__rate_interval: max($__interval + scrape interval, 4 x scrape interval), with a 1 s step.
RATE_INTERVAL = f"{4 * SCRAPE_SECONDS}s"
STEP_SECONDS = 1
# Real seconds of play: long enough for rounds, arena pairings, ratings and flags at TIME_SCALE.
PLAY_SECONDS = 35.0
SCENARIO = Scenario(
    "dashboards",
    # The second cancels itself at its start (T-3, fewer than 4): openings consumes its cancellation,
    # so that its consumer group has committed something for the broker's view of its lag to show.
    tournaments=(TournamentPlan("rr4", "round robin of 4", 4), TournamentPlan("few", "three entrants", 3)),
    arenas=(ArenaPlan("arena8", "arena of 8", 8, duration_minutes=10),),
    triple_blocks=(TripleBlockPlan("tb", "Triple Block game"),),
    guests=1, computers=1,
)
# Queries of events that may not happen during the play; each must say `or vector(0)`.
RARE_EVENT_QUERIES: frozenset[str] = frozenset()

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def system(prometheus_for, start_system) -> Iterator[tuple[SystemStack, Prometheus]]:
    """The five services and the lag exporter, scraped every second by a Prometheus with the alert rules."""
    stack = start_system(SERVICE_NAMES, time_scale=TIME_SCALE)
    stack.start_lag_exporter(poll_seconds=SCRAPE_SECONDS)
    yield stack, prometheus_for(stack)


async def play(stack: SystemStack) -> None:
    """The scenario for PLAY_SECONDS, with a client watching the round robin meanwhile."""
    prefix = f"dash{uuid.uuid4().hex[:6]}-"
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    addresses = Addresses(pairing=stack.services["pairing"].grpc_address, arena=stack.services["arena"].grpc_address,
                          clock=stack.services["clock"].grpc_address, rating=stack.services["rating"].grpc_address)
    playsite = PlaySite(stack.kafka_bootstrap, time_source, Profiles(seed=11), PlaySiteConfig(
        seed=11, think_seconds=(1.0, 3.0), group_id=f"playsite-{prefix}", player_prefix=prefix,
        arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock))
    runner = ScenarioRunner(SCENARIO, addresses, playsite, time_source, poll_seconds=0.5,
                            population=Population.make(SCENARIO.bots_needed, SCENARIO.guests, SCENARIO.computers,
                                                       prefix=prefix))
    await playsite.start()
    try:
        await asyncio.gather(runner.run(timeout=PLAY_SECONDS), watch(addresses.pairing, runner))
    finally:
        await playsite.stop()


async def watch(address: str, runner: ScenarioRunner) -> None:
    """Hold a WatchTournament stream on the round robin for most of the play (the stream panels' data)."""
    ends = time.monotonic() + PLAY_SECONDS - 5
    while not runner.part("rr4").competition_id:
        if time.monotonic() > ends:
            return
        await asyncio.sleep(0.2)
    async with grpc.aio.insecure_channel(address) as channel:
        call = tournament_pb2_grpc.TournamentServiceStub(channel).WatchTournament(
            tp.WatchTournamentRequest(tournament_id=runner.part("rr4").competition_id))
        try:
            await asyncio.wait_for(_drain(call), max(0.0, ends - time.monotonic()))
        except TimeoutError:
            pass
        finally:
            call.cancel()


async def _drain(call: Any) -> None:
    async for _change in call:
        pass


def dashboard_queries() -> Iterator[tuple[str, str, str]]:
    """(dashboard, where, PromQL as Grafana sends it) for every panel target and query variable."""
    for path in sorted(DASHBOARDS.glob("*.json")):
        dashboard = json.loads(path.read_text())
        values = {"__rate_interval": RATE_INTERVAL}
        for variable in dashboard["templating"]["list"]:
            values[variable["name"]] = variable["allValue"]
        panels = list(dashboard["panels"])
        while panels:
            panel = panels.pop(0)
            panels.extend(panel.get("panels", []))
            for target in panel.get("targets", []):
                yield path.name, f"{panel['title']} [{target['refId']}]", _substitute(target["expr"], values)
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                match = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", variable["query"]["query"])
                assert match, variable["query"]["query"]
                yield path.name, f"variable ${variable['name']}", _substitute(match.group(1), values)


def _substitute(expr: str, values: dict[str, str]) -> str:
    text = re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)
    assert "$" not in text, text
    return text


def test_every_dashboard_query_returns_series_on_a_real_prometheus(system) -> None:
    stack, server = system
    started = time.time()
    asyncio.run(play(stack))
    played = time.time()
    # Every target scraped twice more after the play, so that what it counted last (the Watch stream's
    # end) is in the range and in a rate window.
    server.wait_until("scrapes after the play", lambda: server.latest_scrape() > played + 2 * SCRAPE_SECONDS)
    ended = server.latest_scrape()

    queries = list(dashboard_queries())
    errors, empty, nan_only = [], [], []
    for dashboard, where, expr in queries:
        try:
            result = server.api("query_range", query=expr, start=started, end=ended, step=STEP_SECONDS)["result"]
        except QueryError as error:
            errors.append(f"{dashboard} {where}: {error}\n    {expr}")
            continue
        if not result and expr not in RARE_EVENT_QUERIES:
            empty.append(f"{dashboard} {where}: {expr}")
        elif all(value == "NaN" for series in result for _, value in series["values"]):
            nan_only.append(f"{dashboard} {where}")
    print(f"\ndashboard queries on a real Prometheus: {len(queries)} queries, {len(errors)} errors, "
          f"{len(empty)} empty, {len(nan_only)} NaN only (quantiles and ratios of events that did not happen), "
          f"{len(RARE_EVENT_QUERIES)} rare-event queries allowed to be empty")
    print("NaN only:\n  " + "\n  ".join(nan_only))
    assert all(expr.rstrip().endswith("or vector(0)") for expr in RARE_EVENT_QUERIES)
    assert not errors, "queries Prometheus refused:\n" + "\n".join(errors)
    assert not empty, "queries without a series:\n" + "\n".join(empty)

    rules = [rule for group in server.api("rules")["groups"] for rule in group["rules"]]
    assert len(rules) == len([r for g in yaml.safe_load(ALERT_RULES.read_text())["groups"] for r in g["rules"]])
    broken = [f"{rule['name']}: {rule.get('lastError')}" for rule in rules if rule["health"] != "ok"]
    assert not broken, "alert rules that do not evaluate:\n" + "\n".join(broken)
    active = sorted(f"{alert['labels']['alertname']} ({alert['state']})" for alert in server.api("alerts")["alerts"])
    print(f"alert rules evaluated: {len(rules)}, none failing; active at the end: {active or 'none'}")
