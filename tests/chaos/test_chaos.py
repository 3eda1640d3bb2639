"""Issue 10, faults: a seeded scenario played while services are killed, events redelivered,
the broker paused, Redis flushed and PostgreSQL stormed; the invariants hold after each.

Run with `make chaos`. Knobs (environment): CHAOS_SEED (default 7), CHAOS_KILL_EVERY
("3,6": seconds between kills, uniform), CHAOS_KILL_TIME_SCALE (default 30), CHAOS_BROKER_PAUSE
(seconds of SIGSTOP, default 30; shorten it for a quick run), CHAOS_STORM_CONNECTIONS (default
300), CHAOS_RESULTS (the figures' JSON file, default .arbiter/chaos-results.json).

Each test runs the five services on a tansu, a redis-server and a PostgreSQL database of its
own (the session's PostgreSQL server), so a paused broker or a flushed Redis hurts nobody else.

Not checked against an undisturbed run of the same seed: the simulator's games are not a
function of the seed alone. Game ids contain the tournament id (`t_<random hex>`, pairing's
CreateTournament) and the arena's game ids are made by its matchmaker, and the play site seeds
each game's moves from `{seed}/{game_id}`, so the same seed plays other moves in another run;
the arena's pairings follow who finishes first in real time, and flags follow real time. What
is checked instead is that every outcome equals the pure rules' recomputation from the games
actually recorded on the topics.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
import time
from datetime import datetime
from typing import Any

import grpc
import pytest

from arbiter.contracts import arena_pb2, arena_pb2_grpc, common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.devstack import chaos
from arbiter.devstack.chaos import FaultCounts, KillDriver, Recorded
from arbiter.devstack.stack import SystemStack
from arbiter.kit.timesource import TimeSource
from arbiter.simulator.behaviour import Profiles
from arbiter.simulator.playsite import PlaySite, PlaySiteConfig
from arbiter.simulator.scenario import (
    Addresses, ArenaPlan, Population, Scenario, ScenarioRunner, TournamentPlan,
)

pytestmark = pytest.mark.timeout(420)

SEED = int(os.environ.get("CHAOS_SEED", "7"))
KILL_EVERY = tuple(float(x) for x in os.environ.get("CHAOS_KILL_EVERY", "3,6").split(","))
BROKER_PAUSE = float(os.environ.get("CHAOS_BROKER_PAUSE", "30"))
STORM_CONNECTIONS = int(os.environ.get("CHAOS_STORM_CONNECTIONS", "300"))
TIME_SCALE = 60.0
KILL_TIME_SCALE = float(os.environ.get("CHAOS_KILL_TIME_SCALE", "30"))


def chaos_scenario() -> Scenario:
    """The simulator's small scenario: a 5-entrant round robin and an 8-player arena."""
    return Scenario("chaos", tournaments=(TournamentPlan("rr5", "5-entrant round robin", 5),),
                    arenas=(ArenaPlan("arena8", "8-player arena", 8, duration_minutes=10),), guests=1, computers=1)


class _RetryUnavailable(grpc.aio.UnaryUnaryClientInterceptor):
    """A service being restarted answers UNAVAILABLE for a while: the play site's people wait for it.

    Every call waits for the channel to be ready (not failing fast in the reconnect backoff)
    and is tried again on UNAVAILABLE until `patience` seconds have passed.
    """

    def __init__(self, patience: float = 120.0) -> None:
        self.patience = patience

    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[override]
        deadline = time.monotonic() + self.patience
        details = grpc.aio.ClientCallDetails(
            client_call_details.method, client_call_details.timeout or 30.0, client_call_details.metadata,
            client_call_details.credentials, True)
        while True:
            call = await continuation(details, request)
            try:
                await call
            except grpc.aio.AioRpcError as error:
                if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) \
                        and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                    continue
            return call


class PatientRunner(ScenarioRunner):
    """The simulator's runner, its gRPC calls retried while a service restarts."""

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = grpc.aio.insecure_channel(address, interceptors=[_RetryUnavailable()], options=[
            ("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 1000)])
        self._channels.append(channel)
        return channel


def _addresses(stack: SystemStack) -> Addresses:
    return Addresses(pairing=stack.services["pairing"].grpc_address, arena=stack.services["arena"].grpc_address,
                     clock=stack.services["clock"].grpc_address, rating=stack.services["rating"].grpc_address)


async def play(stack: SystemStack, seed: int = SEED, timeout: float = 240.0, during=None) -> PatientRunner:
    """Play the chaos scenario with the simulator; `during(runner)` runs alongside (an async fault)."""
    scenario = chaos_scenario()
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    addresses = _addresses(stack)
    playsite = PlaySite(stack.kafka_bootstrap, time_source, Profiles(seed=seed), PlaySiteConfig(
        seed=seed, think_seconds=(1.0, 3.0), group_id=f"playsite-chaos-{seed}", player_prefix="c-",
        arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock))
    population = Population.make(scenario.bots_needed, scenario.guests, scenario.computers, prefix="c-")
    runner = PatientRunner(scenario, addresses, playsite, time_source, population=population,
                           say=lambda _line: None, poll_seconds=0.5)
    await playsite.start()
    try:
        if during is None:
            await runner.run(timeout)
        else:
            await asyncio.gather(runner.run(timeout), during(runner))
    finally:
        await playsite.stop()
    return runner


async def check(stack: SystemStack, runner: PatientRunner) -> tuple[list[str], dict[str, Any]]:
    """Every invariant of the issue, from the recorded events and the services' answers."""
    await asyncio.sleep(2)  # the last results reach the consumers
    recorded = await Recorded.read(stack.kafka_bootstrap)
    problems = chaos.game_differences(recorded)
    info: dict[str, Any] = {"games_requested": len({e.game_id for e in recorded.requested}),
                            "games_finished": len(recorded.first_finished()),
                            "notes": list(runner.notes)}
    for part in runner.parts:
        if part.status != "finished":
            problems.append(f"{part.kind} {part.key} ended {part.status!r}")
    rr = runner.part("rr5")
    if rr.competition_id:
        async with grpc.aio.insecure_channel(stack.services["pairing"].grpc_address) as channel:
            stub = tournament_pb2_grpc.TournamentServiceStub(channel)
            standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=rr.competition_id))
        served = {r.player_id: r.points for r in standings.rows}
        expected = chaos.tournament_points(recorded, rr.competition_id)
        expected = {p: expected.get(p, 0) for p in served} | expected
        if served != expected:
            problems.append(f"rr5 standings points {served} != recomputed from the results {expected}")
        ranks = [r.points for r in standings.rows]
        if ranks != sorted(ranks, reverse=True):
            problems.append(f"rr5 standings not ordered by points: {ranks}")
        info["rr5_points"] = served
    arena = runner.part("arena8")
    if arena.competition_id:
        async with grpc.aio.insecure_channel(stack.services["arena"].grpc_address) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)
            board = await stub.GetLeaderboard(arena_pb2.GetLeaderboardRequest(
                arena_id=arena.competition_id, page=common.PageRequest(page_size=100)))
        served_rows = {r.player_id: (r.points, r.wins, r.games) for r in board.rows}
        want = {r.player_id: (r.points, r.wins, r.games)
                for r in chaos.arena_leaderboard(recorded, arena.competition_id, arena.players)}
        if served_rows != want:
            diff = {p: (served_rows.get(p), want.get(p)) for p in set(served_rows) | set(want)
                    if served_rows.get(p) != want.get(p)}
            problems.append(f"arena8 leaderboard (served, recomputed) differs: {diff}")
        info["arena8_games"] = sum(r.games for r in board.rows) // 2
    problems += await chaos.rating_differences(stack.database_url, recorded)
    return problems, info


def _report(name: str, started: float, counts: FaultCounts, problems: list[str], info: dict[str, Any]) -> None:
    print(f"\n[{name}] {time.monotonic() - started:.0f} s, faults {counts.as_dict()}, {info}")
    for line in problems:
        print(f"  difference: {line}")


def test_services_killed_every_few_seconds(own_system, chaos_figures) -> None:
    """SIGKILL a random service every few seconds while the scenario plays: the invariants hold."""
    started = time.monotonic()
    # 30x: the scenario lasts long enough (about 1.5 min) for a couple of dozen kills.
    stack = own_system(time_scale=KILL_TIME_SCALE)
    driver = KillDriver(stack, every=KILL_EVERY, seed=SEED, wait=False, serving_timeout=90)

    async def kill_once_created(runner: PatientRunner) -> None:
        # Not before both competitions exist: a CreateTournament retried through a 20 s restart
        # at 60x would ask for a start already in the past (T-4), which is the caller's doing.
        while not all(p.competition_id for p in runner.parts):
            await asyncio.sleep(0.2)
        driver.start()

    try:
        runner = asyncio.run(play(stack, during=kill_once_created))
    finally:
        driver.stop()
    problems, info = asyncio.run(check(stack, runner))
    problems += [f"driver: {e}" for e in driver.errors]
    info["kill_log"] = [line for _t, line in driver.log]
    info["seconds"] = round(time.monotonic() - started)
    chaos_figures.record("kill", driver.counts, problems, **info)
    _report("kill", started, driver.counts, problems, info)
    assert driver.counts.kills > 0
    assert not problems, problems


def test_every_event_delivered_again_changes_nothing(own_system, chaos_figures) -> None:
    """Stop the consumers, rewind their groups to the beginning, restart: no table changes."""
    started = time.monotonic()
    stack = own_system(time_scale=TIME_SCALE)
    runner = asyncio.run(play(stack))
    counts = FaultCounts()
    problems, info = asyncio.run(check(stack, runner))
    print(f"\n[redelivery] undisturbed run: {info} {problems}")
    names = ("rating", "pairing", "arena", "openings", "clock")
    schemas = names
    # Stopped cleanly first, so that every committed offset and every row is final.
    for name in names:
        stack.services[name].process.stop()
    before = asyncio.run(chaos.snapshot_tables(stack.database_url, schemas))

    async def rewind() -> int:
        return sum(await asyncio.gather(*(chaos.rewind_service(stack, name, counts) for name in names)))

    redelivered = asyncio.run(rewind())
    for name in names:
        stack.start_service(name)
    stack.wait_serving(timeout=90, names=names)

    async def caught_up() -> None:
        await asyncio.gather(*(chaos.wait_caught_up(stack.kafka_bootstrap, name, timeout=120) for name in names))

    asyncio.run(caught_up())
    time.sleep(3)  # timers and relays settle
    for name in names:
        stack.services[name].process.stop()
    after = asyncio.run(chaos.snapshot_tables(stack.database_url, schemas))
    problems += chaos.snapshot_differences(before, after)
    info.update(seconds=round(time.monotonic() - started), redelivered=redelivered,
                tables=len(before), rows=sum(len(v) for v in before.values()))
    chaos_figures.record("redelivery", counts, problems, **info)
    _report("redelivery", started, counts, problems, info)
    assert redelivered > 0
    assert not problems, problems


def test_broker_paused_redis_flushed_postgres_stormed(own_system, chaos_figures) -> None:
    """SIGSTOP the broker for CHAOS_BROKER_PAUSE s, FLUSHALL Redis, storm PostgreSQL: the scenario completes."""
    started = time.monotonic()
    stack = own_system(time_scale=TIME_SCALE)
    counts = FaultCounts()
    tansu = stack.chaos_infra["tansu"]  # type: ignore[attr-defined]
    timeline: list[str] = []

    async def faults(runner: PatientRunner) -> None:
        t0 = time.monotonic()
        await asyncio.sleep(8)  # the competitions are created and running
        chaos.flush_redis(stack.redis_url, counts)
        timeline.append(f"{time.monotonic() - t0:.0f} s: redis flushed")
        await asyncio.sleep(3)
        opened, refused = await chaos.connection_storm(stack.database_url, STORM_CONNECTIONS, 4.0, counts)
        timeline.append(f"{time.monotonic() - t0:.0f} s: storm of {opened} connections ({refused} refused)")
        await asyncio.sleep(3)

        def pause() -> None:
            with chaos.paused(tansu, counts):
                time.sleep(BROKER_PAUSE)

        await asyncio.to_thread(pause)
        timeline.append(f"{time.monotonic() - t0:.0f} s: broker resumed after {BROKER_PAUSE:.0f} s")

    runner = asyncio.run(play(stack, timeout=300, during=faults))
    problems, info = asyncio.run(check(stack, runner))
    for name, service in stack.services.items():
        if service.process is not None and service.process.exited():
            problems.append(f"service {name} exited with {service.process.returncode()} (did not recover)")
    info.update(seconds=round(time.monotonic() - started), timeline=timeline)
    chaos_figures.record("broker-redis-postgres", counts, problems, **info)
    _report("broker-redis-postgres", started, counts, problems, info)
    assert not problems, problems
