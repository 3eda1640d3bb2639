"""The whole system with the play-site simulator: competitions played to the end (DESIGN.md, e2e)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import grpc
import pytest
from aiokafka import AIOKafkaProducer

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.contracts import rating_pb2, rating_pb2_grpc
from arbiter.devstack.stack import SystemStack
from arbiter.draughts import Color, Position
from arbiter.kit import events
from arbiter.kit.auth import TokenSigner, signing_key
from arbiter.kit.timesource import TimeSource
from arbiter.simulator.behaviour import Behaviour, Profiles
from arbiter.simulator.playsite import PlaySite, PlaySiteConfig
from arbiter.simulator.scenario import Addresses, ArenaPlan, Population, Scenario, ScenarioRunner, TournamentPlan

pytestmark = pytest.mark.timeout(300)


def _addresses(stack: SystemStack) -> Addresses:
    return Addresses(pairing=stack.services["pairing"].grpc_address, arena=stack.services["arena"].grpc_address,
                     clock=stack.services["clock"].grpc_address, rating=stack.services["rating"].grpc_address,
                     auth_signing_key=stack.auth_signing_key)


async def _play(stack: SystemStack, scenario: Scenario, prefix: str, assigned: dict[str, Behaviour],
                timeout: float, finished: list[ev.GameFinished] | None = None) -> ScenarioRunner:
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    addresses = _addresses(stack)
    population = Population.make(scenario.bots_needed, scenario.guests, scenario.computers, prefix=prefix)
    profiles = Profiles(seed=7, assigned={f"{prefix}{player}": b for player, b in assigned.items()})
    # Every other player is normal: the test decides who misbehaves.
    profiles.mix = {Behaviour.NORMAL: 1.0}
    playsite = PlaySite(stack.kafka_bootstrap, time_source, profiles, PlaySiteConfig(
        seed=7, think_seconds=(1.0, 3.0), group_id=f"playsite-{prefix}", player_prefix=prefix,
        arena_grpc_addr=addresses.arena,
        clock_grpc_addr=addresses.clock, auth_signing_key=addresses.auth_signing_key))
    runner = ScenarioRunner(scenario, addresses, playsite, time_source, population=population, poll_seconds=0.5)
    if finished is not None:
        playsite.on_finished.append(finished.append)
    await playsite.start()
    try:
        await runner.run(timeout)
    finally:
        await playsite.stop()
    return runner


def test_round_robin_played_to_the_end_by_the_simulator(system: SystemStack) -> None:
    stack = system
    scenario = Scenario("e2e-rr", tournaments=(TournamentPlan("rr5", "round robin of 5", 5),), guests=2, computers=1)
    prefix = f"rr{datetime.now(UTC):%H%M%S}-"
    runner = asyncio.run(_play(stack, scenario, prefix, {
        # T-18: in a casual game when round 1 is paired; two, since one of them may have the bye.
        "bot-0002": Behaviour.BUSY,
        "bot-0003": Behaviour.BUSY,
        "bot-0004": Behaviour.RESIGNS,
        "bot-0005": Behaviour.NEVER_SHOWS,  # T-16: loses every game on time, unrated
    }, timeout=200))

    part = runner.part("rr5")
    assert part.status == "finished", (part.status, runner.notes)
    assert part.format == "round_robin" and part.rounds == 5  # T-2, T-9: odd n plays n rounds
    assert len(part.rows) == 5
    # T-7: every game hands out 2 points (a win, or two draws' worth) except T-19's 0-0 (both absent, or
    # both busy under T-18); T-8: each of the 5 rounds has a bye worth 2. Standings = these games' points.
    rounds = part.pairings
    games = [g for r in rounds for g in r.games]
    assert len(games) == 10 and all(g.finished for g in games)
    worth = {common.GAME_RESULT_WHITE_WINS: (2, 0), common.GAME_RESULT_BLACK_WINS: (0, 2),
             common.GAME_RESULT_DRAW: (1, 1), common.GAME_RESULT_BOTH_LOSE: (0, 0)}
    points: dict[str, int] = {row.player_id: 0 for row in part.rows}
    for game in games:
        assert (game.white_points, game.black_points) == worth[game.result], game
        points[game.white_id] += game.white_points
        points[game.black_id] += game.black_points
    for r in rounds:
        assert r.bye_id and r.bye_points == 2, r
        points[r.bye_id] += 2
    assert {row.player_id: row.points for row in part.rows} == points
    terminations = part.detail["terminations"]
    assert "TERMINATION_BOTH_ABSENT" not in terminations, terminations
    # T-18: a busy entrant's game was forfeited, not opened.
    forfeits = [g for g in games if g.termination == common.TERMINATION_BUSY_FORFEIT]
    assert forfeits and not any(g.opened or g.rated for g in forfeits), forfeits
    # T-16: the absent entrant lost every opened game on time, unrated.
    absent = f"{prefix}bot-0005"
    for game in games:
        if absent in (game.white_id, game.black_id) and game.opened:
            assert game.termination == common.TERMINATION_NEVER_SAT and not game.rated, game
            assert (game.white_points if game.white_id == absent else game.black_points) == 0, game
    # guests and computer accounts were refused everything, nothing was wrongly accepted.
    assert runner.refusals["create_tournament"] == 3 and runner.refusals["join_tournament"] == 3
    assert runner.wrongly_accepted == []
    stats = runner.playsite.stats
    assert stats.errors == 0 and stats.finished >= len(games) - len(forfeits)
    assert stats.pairing_latencies, "no round followed a result"

    # The rating service heard the results: the entrants have rated games.
    token = (("authorization", f"Bearer {TokenSigner(signing_key(stack.auth_signing_key), 'e2e').token()}"),)
    with grpc.insecure_channel(stack.services["rating"].grpc_address) as channel:
        stub = rating_pb2_grpc.RatingServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:  # issue 10: no token, no answer
            stub.GetRating(rating_pb2.GetRatingRequest(player_id=part.rows[0].player_id, variant="international",
                                                       speed=common.SPEED_BLITZ))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        for _ in range(50):
            ratings = [stub.GetRating(rating_pb2.GetRatingRequest(
                player_id=row.player_id, variant="international", speed=common.SPEED_BLITZ), metadata=token)
                for row in part.rows]
            if sum(r.rating.games for r in ratings) > 0:
                break
            time.sleep(0.2)
        assert sum(r.rating.games for r in ratings) > 0


def test_small_arena_played_to_the_end_by_the_simulator(system: SystemStack) -> None:
    stack = system
    scenario = Scenario("e2e-arena", arenas=(ArenaPlan("arena8", "arena of 8", 8, duration_minutes=10),),
                        guests=1, computers=1)
    prefix = f"ar{datetime.now(UTC):%H%M%S}-"
    finished: list[ev.GameFinished] = []
    runner = asyncio.run(_play(stack, scenario, prefix, {"bot-0003": Behaviour.BOOSTS}, timeout=120,
                               finished=finished))
    part = runner.part("arena8")
    assert part.status == "finished", (part.status, runner.notes)
    assert part.rows and sum(r.games for r in part.rows) >= 2 * 4  # everyone played at least once
    assert runner.wrongly_accepted == []
    # AR-5: the clock applied the booster's boosts (its ClockState said so) and the play site reported them.
    booster = f"{prefix}bot-0003"
    assert runner.playsite.stats.boosts > 0
    assert any((e.white_id == booster and e.white_boosted) or (e.black_id == booster and e.black_boosted)
               for e in finished)
    assert not any((e.white_boosted and e.white_id != booster) or (e.black_boosted and e.black_id != booster)
                   for e in finished)


# -- T-16 against T-19 through the clock service: the play site's presence decides which applies --


async def _absence_scenario(stack, prefix: str, variant: str = "international", fen: str = "",
                    absent_is_black: bool = False) -> dict[str, ev.GameFinished]:
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    absent, present, other = f"{prefix}absent", f"{prefix}present", f"{prefix}absent2"
    profiles = Profiles(seed=5, mix={Behaviour.NORMAL: 1.0},
                        assigned={absent: Behaviour.NEVER_SHOWS, other: Behaviour.NEVER_SHOWS})
    playsite = PlaySite(stack.kafka_bootstrap, time_source, profiles, PlaySiteConfig(
        seed=5, think_seconds=(1.0, 2.0), group_id=f"{prefix}playsite", player_prefix=prefix))
    results: dict[str, ev.GameFinished] = {}
    playsite.on_finished.append(lambda finished: results.setdefault(finished.game_id, finished))
    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap)
    await playsite.start()
    await producer.start()
    try:
        one = (present, absent) if absent_is_black else (absent, present)
        games = {f"{prefix}one-absent": one, f"{prefix}both-absent": (absent + "x", other)}
        profiles.assigned[absent + "x"] = Behaviour.NEVER_SHOWS
        for game_id, (white, black) in games.items():
            request = ev.GameRequested(
                game_id=game_id, variant=variant, white_id=white, black_id=black, rated=True,
                opening=common.Opening(variant=variant, fen=fen),
                speed=common.SPEED_BULLET, requested_at=events.timestamp(time_source.now()),
                competition=common.CompetitionRef(kind=common.COMPETITION_KIND_CASUAL, id=game_id),
                time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=0)),
            )
            request.meta.event_id = f"{game_id}/requested"
            await producer.send_and_wait(events.GAME_REQUESTED.name, request.SerializeToString(),
                                         key=game_id.encode())
        for _ in range(600):
            if len(results) == len(games):
                break
            await asyncio.sleep(0.1)
    finally:
        await producer.stop()
        await playsite.stop()
    return results


def test_a_no_show_loses_on_time_and_two_no_shows_lose_both(system: SystemStack) -> None:
    stack = system
    prefix = f"ab{uuid.uuid4().hex[:6]}-"
    results = asyncio.run(_absence_scenario(stack, prefix))
    one = results.get(f"{prefix}one-absent")
    both = results.get(f"{prefix}both-absent")
    assert one is not None and both is not None, results
    # T-16/R-3: white never came, black was there: black wins, nobody sat, unrated.
    assert (one.result, one.termination) == (common.GAME_RESULT_BLACK_WINS, common.TERMINATION_NEVER_SAT)
    assert not one.white_sat and not one.black_sat
    # T-19: neither came: 0-0.
    assert (both.result, both.termination) == (common.GAME_RESULT_BOTH_LOSE, common.TERMINATION_BOTH_ABSENT)


def test_a_no_show_who_moves_first_after_a_three_move_opening_loses_on_time(system: SystemStack) -> None:
    stack = system
    prefix = f"ao{uuid.uuid4().hex[:6]}-"
    position = Position.initial("italian")
    for _ in range(3):
        position = position.play(position.legal_moves()[0])
    assert position.turn is Color.BLACK
    results = asyncio.run(_absence_scenario(stack, prefix, "italian", position.to_fen(), absent_is_black=True))
    one = results.get(f"{prefix}one-absent")
    assert one is not None, results
    # Black is to move and never comes; white is there, waiting: T-16, white wins.
    assert (one.result, one.termination) == (common.GAME_RESULT_WHITE_WINS, common.TERMINATION_NEVER_SAT)
