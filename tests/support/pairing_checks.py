"""Checks shared by the pairing tests: a finished tournament against the rules core, recomputed from its games."""

from __future__ import annotations

from collections import Counter

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.standings import StandingRow
from arbiter.competition.tournament_flow import (
    final_standings,
    pair_round,
    result_of_finish,
    round_bye_points,
)
from arbiter.competition.types import Format
from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.convert import GAME_RESULT
from tests.support.playsite import Behaviour, TournamentLog, expected_standings, seeded_result


def rows_of(rows) -> list[tuple]:
    """Comparable standings: rank, player, points, BH, SB, wins, games."""
    return [(r.rank, r.player_id, r.points, round(r.buchholz, 3), round(r.sonneborn_berger, 3), r.wins, r.games)
            for r in rows]


def core_rows(rows) -> list[tuple]:
    """The rules core's rows in the same shape (a round robin shows no BH: 0 on the wire, T-22)."""
    return [(r.rank, r.entrant, r.points, float(r.buchholz or 0), round(r.sonneborn_berger, 3), r.wins, r.games)
            for r in rows]


async def assert_finished_as_the_rules_say(
    stub: tournament_pb2_grpc.TournamentServiceStub, log: TournamentLog, tournament_id: str
) -> tp.GetPairingsResponse:
    """The final standings (event and RPC) equal the rules core's from the recorded games; no game requested twice."""
    assert log.finished is not None, f"{tournament_id} did not finish"
    assert log.started is not None
    # Every game requested by exactly one event, and only once per place in the draw (lichess #12147).
    for game_id, requests in log.requests.items():
        assert len({r.meta.event_id for r in requests}) == 1, f"{game_id} requested by several events"
    places = Counter((r[0].competition.round, r[0].white_id, r[0].black_id, r[0].game_in_pairing)
                     for r in log.requests.values())
    assert max(places.values(), default=1) == 1
    pairings = await stub.GetPairings(tp.GetPairingsRequest(tournament_id=tournament_id))
    seats = [Entrant(e.player_id, e.berger_number, e.initial_rank, e.rating) for e in pairings.entrants]
    # The event lists the entrants in number order: Berger numbers or initial ranks (T-13, T-14).
    key = (lambda s: s.berger_number) if log.started.format == "round_robin" else (lambda s: s.initial_rank)
    assert list(log.started.entrant_ids) == [s.player for s in sorted(seats, key=key)]
    games = [g for r in pairings.rounds for g in r.games]
    assert {g.game_id for g in games} == set(log.decided), "the service and the play site disagree on the games"
    assert all(g.finished for g in games)
    expected = core_rows(expected_standings(log, seats))
    assert rows_of(log.finished.standings) == expected
    standings = await stub.GetStandings(tp.GetStandingsRequest(tournament_id=tournament_id))
    assert standings.final and rows_of(standings.rows) == expected
    assert len(standings.explanations) == len(expected) - 1
    return pairings


def replay_with_the_rules(
    tournament_id: str, seats: list[Entrant], fmt: Format, rounds: int, per_pairing: int, behaviour: Behaviour
) -> tuple[list[tuple], tuple[StandingRow, ...]]:
    """The tournament as the rules core plays it with this play site's seeded results, with no service at all:
    every round's pairing (round, board, white, black, bye) and the final standings."""
    history: list[PlayedGame[str]] = []
    byes: list[Bye[str]] = []
    draws = []
    for number in range(1, rounds + 1):
        draw = pair_round(fmt, seats, history, byes, number, rounds, per_pairing)
        draws.append((number, draw.pairs, draw.bye))
        if draw.bye is not None:
            byes.append(Bye(number, draw.bye, round_bye_points(per_pairing)))
        for game in draw.games(tournament_id, per_pairing):
            result = GAME_RESULT[seeded_result(behaviour, game.game_id)]
            scored = result_of_finish(result, None, white_sat=True, black_sat=True, tournament_rated=True)
            history.append(PlayedGame(number, game.white, game.black, scored.score.white_points,
                                      scored.score.black_points, scored.kind, game.leg))
    return draws, final_standings(fmt, seats, history, byes)
