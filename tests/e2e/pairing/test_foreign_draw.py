"""A round's opening drawn by someone else before the start must not stall the tournament (O-10).

The probe drew round 1 of an upcoming official-table tournament under other settings; at the
start the openings service refused pairing's own draw ("already has its opening, drawn as ...")
and pairing, taking every refusal for an outage, retried for ever: RUNNING at round 0.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import grpc

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import openings_pb2, openings_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from tests.support.polling import eventually

START_TIMEOUT = 60.0


def registered(prefix: str) -> common.Actor:
    return common.Actor(player_id=f"{prefix}-{uuid.uuid4().hex[:8]}", kind=common.ACCOUNT_KIND_REGISTERED)


async def test_a_foreign_draw_of_round_one_neither_stalls_nor_changes_the_tournament_opening(pairing_system) -> None:
    clock = TimeSource(pairing_system.time_scale, datetime.fromisoformat(pairing_system.time_origin))
    async with grpc.aio.insecure_channel(pairing_system.services["pairing"].grpc_address) as pairing_channel, \
            grpc.aio.insecure_channel(pairing_system.services["openings"].grpc_address) as openings_channel:
        tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing_channel)
        openings = openings_pb2_grpc.OpeningServiceStub(openings_channel)
        settings = tp.TournamentSettings(
            name="Foreign draw", variant="italian", opening_mode=common.OPENING_MODE_TABLE_ALL, capacity=8,
            duration_minutes=600, starts_at=timestamp(clock.now() + timedelta(minutes=6)),
            time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=1)),
        )
        created = await tournaments.CreateTournament(tp.CreateTournamentRequest(
            actor=registered("creator"), settings=settings))
        tournament_id = created.tournament.id
        for _ in range(4):
            await tournaments.JoinTournament(tp.JoinTournamentRequest(actor=registered("p"),
                                                                      tournament_id=tournament_id))
        round_one = common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament_id, round=1)
        # Someone else's draws of round 1, under settings the tournament does not play.
        for mode in (common.OPENING_MODE_RANDOM_1, common.OPENING_MODE_TABLE_UP_TO_1):
            await openings.DrawOpening(openings_pb2.DrawOpeningRequest(
                competition=round_one, variant="italian", mode=mode))
        await openings.DrawOpening(openings_pb2.DrawOpeningRequest(
            competition=round_one, variant="english", mode=common.OPENING_MODE_TABLE_ALL))

        await eventually(lambda: tournaments.GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id)),
                         "round 1 started", timeout=START_TIMEOUT, every=0.2,
                         until=lambda tournament: tournament.current_round >= 1)

        # Round 1 plays the tournament's own draw: the table (all 174, O-8), as its settings ask.
        pairings = await tournaments.GetPairings(tp.GetPairingsRequest(tournament_id=tournament_id))
        (first,) = [r for r in pairings.rounds if r.round == 1]
        own = await openings.DrawOpening(openings_pb2.DrawOpeningRequest(
            competition=round_one, variant="italian", mode=common.OPENING_MODE_TABLE_ALL))
        assert own.opening.mode == common.OPENING_MODE_TABLE_ALL and own.opening.number
        assert (first.opening.mode, first.opening.number) == (own.opening.mode, own.opening.number)
