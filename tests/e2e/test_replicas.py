"""`arbiter up --replicas 2`'s stack plays a competition while one replica of each service is SIGKILLed.

Every service runs twice on an embedded broker whose topics have two partitions; each caller
dials one balanced target per service (arbiter_tools.devstack.replicas). One replica of each
service is killed in turn while the small scenario (a round robin and an arena) is played: the
play site's calls, which are not retried past the kit channel's own retries, keep being
answered by the survivors, and every competition finishes. And `arbiter up --replicas` itself:
every replica listed with ports of its own, one balanced target per service, enough partitions.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path

import grpc

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import (
    arena_pb2_grpc,
    clock_pb2,
    clock_pb2_grpc,
    openings_pb2,
    openings_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2_grpc,
)
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from arbiter_tools.simulator.behaviour import Profiles
from arbiter_tools.simulator.playsite.base import PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import Addresses, ScenarioRunner, run_failed, small_scenario
from tests.support.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
TIME_SCALE = 60.0
# A killed replica's partitions move to the survivor once the group sees it gone.
FAST_REJOIN = {"KAFKA_SESSION_TIMEOUT_MS": "3000", "KAFKA_HEARTBEAT_INTERVAL_MS": "300"}


def _probes(stack: SystemStack, runner: ScenarioRunner) -> dict[str, Callable[[], Awaitable[object]]]:
    """One read call per service through its balanced target, about what the scenario plays."""
    channels = {name: open_channel(stack.grpc_target(name)) for name in SERVICE_NAMES}
    round_robin, arena = runner.part("rr5").competition_id, runner.part("arena8").competition_id
    return {
        "pairing": lambda: tournament_pb2_grpc.TournamentServiceStub(channels["pairing"]).GetStandings(
            tp.GetStandingsRequest(tournament_id=round_robin), timeout=10),
        "arena": lambda: arena_pb2_grpc.ArenaServiceStub(channels["arena"]).GetArena(
            ap.GetArenaRequest(arena_id=arena), timeout=10),
        "openings": lambda: openings_pb2_grpc.OpeningServiceStub(channels["openings"]).ListOpenings(
            openings_pb2.ListOpeningsRequest(variant="italian"), timeout=10),
        "rating": lambda: rating_pb2_grpc.RatingServiceStub(channels["rating"]).GetRatings(
            rating_pb2.GetRatingsRequest(player_ids=list(runner.population.bots[:5]), variant="international",
                                         speed=common.SPEED_BLITZ), timeout=10),
        "clock": lambda: clock_pb2_grpc.ClockServiceStub(channels["clock"]).GetClock(
            clock_pb2.GetClockRequest(game_id=next(iter(runner.playsite.games), "no-game")), timeout=10),
    }


async def test_two_replicas_of_everything_play_on_while_one_of_each_is_killed(tmp_path: Path,
                                                                              database_url: str) -> None:
    environ = {key: value for key, value in os.environ.items()
               if key not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")} | {"DATABASE_URL": database_url}
    stack = SystemStack(tmp_path / "state", time_scale=TIME_SCALE, free_ports=True, environ=environ,
                        extra_env=FAST_REJOIN, say=lambda _line: None, replica_counts=dict.fromkeys(SERVICE_NAMES, 2))
    try:
        await asyncio.to_thread(stack.start_infrastructure)
        await asyncio.to_thread(stack.start_services)
        await asyncio.to_thread(stack.wait_serving, 90)
        assert stack.kafka_partitions == "2"
        assert all(len(stack.replicas_of(name)) == 2 for name in SERVICE_NAMES)
        assert len({replica.grpc_port for name in SERVICE_NAMES for replica in stack.replicas_of(name)}) == 10
        addresses = Addresses(pairing=stack.grpc_target("pairing"), arena=stack.grpc_target("arena"),
                              clock=stack.grpc_target("clock"), rating=stack.grpc_target("rating"))
        assert addresses.pairing.startswith("ipv4:") and addresses.pairing.count(",") == 1
        time_source = TimeSource(TIME_SCALE, datetime.fromisoformat(stack.time_origin))
        playsite = PlaySite(stack.kafka_bootstrap, time_source, Profiles(seed=3), PlaySiteConfig(
            seed=3, group_id="replicas-playsite", arena_grpc_addr=addresses.arena, clock_grpc_addr=addresses.clock))
        runner = ScenarioRunner(small_scenario(), addresses, playsite, time_source, say=lambda _line: None)
        await playsite.start()
        try:
            play = asyncio.create_task(runner.run(timeout=400))
            await eventually(lambda: all(part.competition_id for part in runner.parts) and playsite.stats.finished >= 2,
                             "both competitions created and two games finished", timeout=180)
            probes = _probes(stack, runner)
            for name in SERVICE_NAMES:
                played = playsite.stats.finished
                await asyncio.to_thread(stack.kill_service, name, 1)
                for _ in range(6):  # several calls: round robin would send every other one to the dead replica
                    try:
                        await probes[name]()
                    except grpc.aio.AioRpcError as error:
                        assert error.code() == grpc.StatusCode.NOT_FOUND, f"{name} after its kill: {error}"
                await eventually(lambda played=played: playsite.stats.finished > played or play.done(),
                                 f"a game finished after {name}'s first replica was killed", timeout=120)
            await asyncio.wait_for(play, 400)
        finally:
            await playsite.stop()
        report = runner.report()
        assert not run_failed(report), report
        assert {part["status"] for part in report["parts"]} == {"finished"}, report["parts"]
        survivors = [r for name in SERVICE_NAMES for r in stack.replicas_of(name) if r.replica == 2]
        assert all(r.process is not None and not r.process.exited() for r in survivors)
        print(f"\n{playsite.stats.finished} games; parts: {[(p['key'], p['status']) for p in report['parts']]}")
    finally:
        await asyncio.to_thread(stack.stop)


def test_arbiter_up_replicas_prints_every_replica_and_one_target_per_service(tmp_path: Path, database_url: str) -> None:
    """And the watch servers of pairing and arena, with addresses of their own, at a lower CPU priority."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL", "KAFKA_PARTITIONS")} | {"DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-m", "arbiter_tools.cli.main", "up", "--replicas", "2", "--replicas", "clock=3",
         "--watch-servers", "--free-ports", "--exit-when-serving", "--json", "--state-dir", str(tmp_path / "state")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["kafka_partitions"] == "3"
    services = summary["services"]
    assert {name: len(service["replicas"]) for name, service in services.items()} == {
        "openings": 2, "rating": 2, "clock": 3, "arena": 2, "pairing": 2}
    clock = services["clock"]
    assert [replica["name"] for replica in clock["replicas"]] == ["clock", "clock-2", "clock-3"]
    assert clock["grpc"] == "ipv4:" + ",".join(replica["grpc"] for replica in clock["replicas"])
    addresses = [replica[kind] for service in services.values() for replica in service["replicas"]
                 for kind in ("grpc", "metrics")]
    watch = {name: service["watch"] for name, service in services.items() if "watch" in service}
    assert {name: server["name"] for name, server in watch.items()} == {
        "pairing": "pairing-watch", "arena": "arena-watch"}
    addresses += [server[kind] for server in watch.values() for kind in ("grpc", "metrics")]
    assert len(set(addresses)) == len(addresses) == 26
    logs = sorted(path.name for path in (tmp_path / "state" / "logs").glob("clock*.log"))
    assert logs == ["clock-2.log", "clock-3.log", "clock.log"]
    watch_logs = (tmp_path / "state" / "logs" / "arena-watch.log").read_text()
    assert '"watch_only": true' in watch_logs and "service ready" in watch_logs
