"""SIGKILL of the pairing service in the middle of a round (lichess issue #12147 is the failure to avoid).

After the restart the tournament finishes with the standings the rules core gives without
any crash, and no game is requested twice.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta

import grpc

from arbiter.competition.records import Entrant
from arbiter.competition.types import Format
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from tests.support.pairing_checks import assert_finished_as_the_rules_say, core_rows, replay_with_the_rules, rows_of
from tests.support.playsite import Behaviour, PlaySite

KILLED_IN_ROUND = 3


async def test_sigkill_mid_round_then_the_same_standings_and_no_game_requested_twice(pairing_system, infra_env):
    stack = pairing_system
    clock = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    site = PlaySite(infra_env["KAFKA_BOOTSTRAP_SERVERS"])
    await site.start()
    channel = grpc.aio.insecure_channel(stack.services["pairing"].grpc_address)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    try:
        created = await stub.CreateTournament(tp.CreateTournamentRequest(
            actor=common.Actor(player_id=f"creator-{uuid.uuid4().hex[:8]}", kind=common.ACCOUNT_KIND_REGISTERED),
            settings=tp.TournamentSettings(
                name="Crash", variant="english", capacity=20, duration_minutes=600,
                time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=60, increment_seconds=1)),
                starts_at=timestamp(clock.now() + timedelta(minutes=8)), opening_mode=common.OPENING_MODE_TABLE_UP_TO_1,
            )))
        tournament_id = created.tournament.id
        behaviour = Behaviour(seed=12147, result_delay=0.1, jitter=3.0)
        log = site.follow(tournament_id, behaviour)
        for index in range(12):
            await stub.JoinTournament(tp.JoinTournamentRequest(
                actor=common.Actor(player_id=f"k{index:02d}-{uuid.uuid4().hex[:6]}",
                                   kind=common.ACCOUNT_KIND_REGISTERED),
                tournament_id=tournament_id))

        def in_round(number: int) -> list[str]:
            return [g for g, r in log.requests.items() if r[0].competition.round == number]

        def decided_in(number: int) -> int:
            return sum(1 for g in in_round(number) if g in log.decided)

        # Mid round: some results of the round are in, some are not.
        await site.wait_for(lambda: KILLED_IN_ROUND in log.rounds and decided_in(KILLED_IN_ROUND) >= 2, 120,
                            f"results of round {KILLED_IN_ROUND}")
        await asyncio.to_thread(stack.kill_service, "pairing")
        assert decided_in(KILLED_IN_ROUND) < len(in_round(KILLED_IN_ROUND)), "the round ended before the kill"
        # The play site goes on: the round's last results wait on the broker for the restarted service.
        await site.wait_for(lambda: decided_in(KILLED_IN_ROUND) == len(in_round(KILLED_IN_ROUND)), 60,
                            "the rest of the round while the pairing service is down")
        assert KILLED_IN_ROUND + 1 not in log.rounds
        await asyncio.to_thread(stack.start_service, "pairing")
        await asyncio.to_thread(stack.wait_serving, 120, ["pairing"])

        await site.wait_end(tournament_id, timeout=240)
        pairings = await assert_finished_as_the_rules_say(stub, log, tournament_id)

        # The same tournament with no crash at all, played by the rules core alone.
        seats = [Entrant(e.player_id, e.berger_number, e.initial_rank, e.rating) for e in pairings.entrants]
        draws, standings = replay_with_the_rules(
            tournament_id, seats, Format(log.started.format), log.started.rounds, log.started.games_per_pairing,
            behaviour,
        )
        assert [(n, [(g.white_id, g.black_id) for g in log.rounds[n].pairings], log.rounds[n].bye_id or None)
                for n in sorted(log.rounds)] == [(n, list(pairs), bye) for n, pairs, bye in draws]
        assert rows_of(log.finished.standings) == core_rows(standings)
        # Every game was requested by one event only, and opened once.
        assert all(len({r.meta.event_id for r in requests}) == 1 for requests in log.requests.values())
        assert len(log.requests) == log.started.rounds * 6
    finally:
        await channel.close()
        await site.stop()
        # The system is shared with the package's other modules: never leave it without its pairing service.
        process = stack.services["pairing"].process
        if process is None or process.exited():
            await asyncio.to_thread(stack.start_service, "pairing")
            await asyncio.to_thread(stack.wait_serving, 120, ["pairing"])
