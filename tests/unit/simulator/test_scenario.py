"""The scenario runner's own decisions, against a TournamentService stand-in over real gRPC (no clock service)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.timesource import TimeSource
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.playsite.router import PlaySite
from arbiter_tools.simulator.scenario import Addresses, Scenario, ScenarioRunner, TournamentPlan, run_failed
from arbiter_tools.simulator.view import render


class TournamentStandIn(tournament_pb2_grpc.TournamentServiceServicer):
    """Creates slowly, refuses guests (A-1), answers a computer's join with another code; finishes at once."""

    def __init__(self, create_seconds: float = 0.0, computer_join: grpc.StatusCode = grpc.StatusCode.PERMISSION_DENIED):
        self.create_seconds = create_seconds
        self.computer_join = computer_join
        self.joins: list[tuple[str, str]] = []

    async def CreateTournament(self, request, context):
        if request.actor.kind != common.ACCOUNT_KIND_REGISTERED:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "A-1: registered accounts only")
        await asyncio.sleep(self.create_seconds)
        return tp.CreateTournamentResponse(tournament=tp.Tournament(id="t_1", state=tp.TOURNAMENT_STATE_SCHEDULED))

    async def JoinTournament(self, request, context):
        self.joins.append((request.actor.player_id, request.tournament_id))
        if request.actor.kind == common.ACCOUNT_KIND_GUEST:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "A-1: registered accounts only")
        if request.actor.kind == common.ACCOUNT_KIND_BOT:
            await context.abort(self.computer_join, "something else went wrong")
        return tp.JoinTournamentResponse()

    async def GetTournament(self, request, context):
        return tp.Tournament(id=request.tournament_id, state=tp.TOURNAMENT_STATE_FINISHED)

    async def GetStandings(self, request, context):
        return tp.GetStandingsResponse()

    async def GetPairings(self, request, context):
        return tp.GetPairingsResponse()


@asynccontextmanager
async def _serving(stand_in: TournamentStandIn) -> AsyncIterator[str]:
    server = grpc.aio.server()
    tournament_pb2_grpc.add_TournamentServiceServicer_to_server(stand_in, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


async def _run(stand_in: TournamentStandIn, scenario: Scenario, profiles: Profiles) -> ScenarioRunner:
    """Run `scenario` against the stand-in; the play site is never started (no game reaches it)."""
    async with _serving(stand_in) as address:
        playsite = PlaySite("127.0.0.1:1", TimeSource(1.0), profiles)
        try:
            runner = ScenarioRunner(scenario, Addresses(pairing=address), playsite, TimeSource(1.0), poll_seconds=0.05)
            await runner.run(timeout=20)
        finally:
            await playsite.producer.stop()
    return runner


def test_without_the_clock_showcased_seats_the_clock_must_end_play_normally() -> None:
    plan = TournamentPlan("t", "t", 4, showcase=((1, Behaviour.NEVER_SHOWS), (2, Behaviour.DISCONNECTS_LONG),
                                                 (3, Behaviour.RESIGNS)))
    scenario = Scenario("showcase", tournaments=(plan,), guests=0, computers=0)
    runner = asyncio.run(_run(TournamentStandIn(), scenario, Profiles(seed=1, mix={Behaviour.NORMAL: 1.0})))

    assert not runner.clock_ready and runner.part("t").status == "finished"
    players = runner.part("t").players
    behaviours = [runner.playsite.profiles.of(p) for p in players[1:]]
    assert behaviours == [Behaviour.NORMAL, Behaviour.NORMAL, Behaviour.RESIGNS]


def test_a_busy_entrants_partner_plays_normally_whatever_the_mix() -> None:
    plan = TournamentPlan("t", "t", 4, showcase=((1, Behaviour.BUSY),))
    scenario = Scenario("busy", tournaments=(plan,), guests=0, computers=0)
    # Resigning or offering draws would end the casual game before round 1 is paired (T-18).
    runner = asyncio.run(_run(TournamentStandIn(), scenario, Profiles(seed=1, mix={Behaviour.RESIGNS: 1.0})))

    partner = runner.population.bots[4]  # the first account after the four entrants
    assert partner not in runner.part("t").players
    assert runner.playsite.profiles.of(partner) is Behaviour.NORMAL
    assert runner.playsite.profiles.of(runner.part("t").players[2]) is Behaviour.RESIGNS


def test_refused_accounts_wait_for_a_slow_create_and_count_only_permission_denied_as_refusals() -> None:
    stand_in = TournamentStandIn(create_seconds=1.5, computer_join=grpc.StatusCode.FAILED_PRECONDITION)
    scenario = Scenario("a1", tournaments=(TournamentPlan("t", "t", 4),), guests=2, computers=1)
    runner = asyncio.run(_run(stand_in, scenario, Profiles(seed=1, mix={Behaviour.NORMAL: 1.0})))

    # Every guest and computer account tried to join the tournament, created after 1.5 s.
    outsiders = {*runner.population.guests, *runner.population.computers}
    assert {player for player, _ in stand_in.joins if player in outsiders} == outsiders
    assert all(target == "t_1" for _, target in stand_in.joins)
    # only PERMISSION_DENIED is a refusal; the computer's other answer is counted apart and shown.
    assert dict(runner.refusals) == {"create_tournament": 3, "join_tournament": 2}
    assert dict(runner.attempt_errors) == {"join_tournament:FAILED_PRECONDITION": 1}
    assert runner.report()["attempt_errors"] == {"join_tournament:FAILED_PRECONDITION": 1}
    screen = render(runner)
    assert "A-1 refusals (guests, computer accounts): 5 " in screen
    assert "join_tournament:FAILED_PRECONDITION 1" in screen
    assert runner.wrongly_accepted == [] and not run_failed(runner.report())


def test_a_run_fails_when_a_part_failed_or_a_guest_was_let_in() -> None:
    fine = {"parts": [{"status": "finished"}, {"status": "skipped: not ready"}], "wrongly_accepted": []}
    assert not run_failed(fine)
    assert run_failed({**fine, "wrongly_accepted": ["join_tournament by guest-01 (ACCOUNT_KIND_GUEST)"]})
    assert run_failed({**fine, "parts": [{"status": "failed: CreateTournament answered INTERNAL"}]})
