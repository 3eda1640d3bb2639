"""The tournament's life between the rule modules: start, rounds, results, close (T-2..T-20, O-11, R-2, R-6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.competition.records import Bye, Entrant, PlayedGame
from arbiter.competition.swiss import ENGINE
from arbiter.competition.tournament_flow import (
    FlowError,
    NextStep,
    OpenGame,
    busy_forfeit,
    check_live_time_control,
    close_tournament,
    closing_deadline,
    closing_draw,
    decide_start,
    final_standings,
    game_id,
    initial_ranks,
    may_close,
    meets_minimum_rating,
    next_step,
    pair_round,
    result_of_abandon,
    result_of_finish,
    result_of_flag,
    round_bye_points,
)
from arbiter.competition.types import Format
from arbiter.vocabulary import GameResult, ResultKind, Side, Termination

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
K = ResultKind


def seats(n: int) -> list[Entrant]:
    """n entrants p01.. with Berger number and initial rank equal to their index."""
    return [Entrant(f"p{i:02d}", i, i, 1500.0) for i in range(1, n + 1)]


def play(fmt: Format, entrants: list[Entrant], rounds: int, per_pairing: int = 1) -> tuple[list, list, list]:
    """Pair every round, White always winning; return draws, games and byes."""
    history: list[PlayedGame[str]] = []
    byes: list[Bye[str]] = []
    draws = []
    for number in range(1, rounds + 1):
        draw = pair_round(fmt, entrants, history, byes, number, rounds, per_pairing)
        draws.append(draw)
        if draw.bye:
            byes.append(Bye(number, draw.bye, round_bye_points(per_pairing)))
        for game in draw.games("t_x", per_pairing):
            history.append(PlayedGame(number, game.white, game.black, 2, 0, K.NORMAL, game.leg))
    return draws, history, byes


def test_the_start_cancels_below_the_minimum_or_plans_the_rounds() -> None:
    """T-3, then T-2/T-9/T-10/T-11/T-12."""
    cancelled = decide_start(3, 4, 7, extra_round=False, home_and_away=False)
    assert cancelled.plan is None and "fewer than the minimum of 4" in cancelled.cancel_reason
    assert "T-3" in cancelled.cancel_reason
    assert decide_start(4, 5, 7, extra_round=False, home_and_away=False).cancel_reason is not None
    four = decide_start(4, 4, 7, extra_round=True, home_and_away=False).plan
    assert (four.format, four.rounds, four.games_per_pairing) == (Format.ROUND_ROBIN, 3, 2)
    thirty = decide_start(30, 4, 7, extra_round=True, home_and_away=True).plan
    assert (thirty.format, thirty.rounds, thirty.games_per_pairing) == (Format.SWISS, 8, 2)


def test_initial_ranks_by_rating_then_name() -> None:
    """T-13."""
    assert initial_ranks({"zoe": 1800, "adam": 1500, "bob": 1500, "eve": 2000}) == {
        "eve": 1, "zoe": 2, "adam": 3, "bob": 4}


def test_initial_ranks_use_the_exact_rating_not_a_rounded_one() -> None:
    """T-13: 1500.4 ranks above 1499.6 even though the name would put the other first."""
    assert initial_ranks({"zed": 1500.4, "amy": 1499.6}) == {"zed": 1, "amy": 2}
    assert initial_ranks({"zed": 1500.5, "amy": 1500.5}) == {"amy": 1, "zed": 2}


def test_a_swiss_first_round_pairs_by_the_exact_ratings() -> None:
    """T-13: the top half meets the bottom half in initial-rank order, ranks from unrounded ratings."""
    ratings = {"zed": 2000.4, "amy": 1999.6, "cal": 1900.0, "dan": 1800.0, "eli": 1700.0, "fay": 1600.0,
               "gus": 1500.0, "hal": 1400.0}
    ranks = initial_ranks(ratings)
    entrants = [Entrant(player, ranks[player], ranks[player], rating) for player, rating in ratings.items()]
    draw = pair_round(Format.SWISS, entrants, [], [], 1, 5, 1)
    opponents = {frozenset((game.white, game.black)) for game in draw.games("t_x", 1)}
    assert frozenset(("zed", "eli")) in opponents and frozenset(("amy", "fay")) in opponents


def test_game_ids_name_the_place_in_the_draw() -> None:
    assert game_id("t_1", 3, 2, 1) == "t_1-r3-b2-g1"


def test_a_four_entrant_round_robin_is_played_home_and_away() -> None:
    """T-10, T-12, O-11: each pairing plays twice in the round, colours reversed; everyone meets everyone."""
    draws, history, _ = play(Format.ROUND_ROBIN, seats(4), 3, per_pairing=2)
    for draw in draws:
        games = draw.games("t_x", 2)
        assert len(games) == 4
        for first, second in zip(games[::2], games[1::2], strict=True):
            assert (first.white, first.black) == (second.black, second.white) and (first.leg, second.leg) == (1, 2)
            assert first.board == second.board
    met = {frozenset((g.white, g.black)) for g in history}
    assert len(met) == 6 and len(history) == 12


def test_an_odd_round_robin_rests_everyone_once() -> None:
    """T-8, T-9, T-14: n rounds for odd n, the Berger table's bye."""
    draws, history, byes = play(Format.ROUND_ROBIN, seats(5), 5)
    assert sorted(b.entrant for b in byes) == [f"p{i:02d}" for i in range(1, 6)]
    assert all(b.points == 2 for b in byes)
    assert len({frozenset((g.white, g.black)) for g in history}) == 10


def test_a_swiss_never_repeats_a_pairing_and_rests_each_at_most_once() -> None:
    """T-13, T-8."""
    draws, history, byes = play(Format.SWISS, seats(9), 6)
    met = [frozenset((g.white, g.black)) for g in history]
    assert len(met) == len(set(met))
    assert len({b.entrant for b in byes}) == 6
    assert all(d.engine == ENGINE for d in draws)


def test_the_same_history_gives_the_same_draw() -> None:
    """T-13: deterministic, so re-pairing after a crash requests the very same games."""
    _, history, byes = play(Format.SWISS, seats(12), 3)
    again = [pair_round(Format.SWISS, seats(12), history, byes, 4, 6, 1) for _ in range(2)]
    assert again[0] == again[1]


def test_double_swiss_rounds_give_double_byes() -> None:
    """T-8 with T-12: a bye is worth 4 when every pairing plays two games."""
    _, _, byes = play(Format.SWISS, seats(7), 2, per_pairing=2)
    assert all(b.points == 4 for b in byes)


def test_results_of_every_ending() -> None:
    """T-7, T-15..T-19, R-3."""
    win = result_of_finish(
        GameResult.WHITE_WINS, Termination.NO_MOVES, white_sat=True, black_sat=True, tournament_rated=True
    )
    assert (win.kind, win.score.white_points, win.score.black_points, win.score.rated) == (K.NORMAL, 2, 0, True)
    draw = result_of_finish(
        GameResult.DRAW, Termination.DRAW_AGREED, white_sat=True, black_sat=True, tournament_rated=False
    )
    assert (draw.score.white_points, draw.score.black_points, draw.score.rated) == (1, 1, False)
    never = result_of_flag(Side.BLACK, loser_never_sat=True, tournament_rated=True)
    assert (never.kind, never.result, never.score.rated) == (K.NEVER_SAT, GameResult.WHITE_WINS, False)
    on_time = result_of_flag(Side.WHITE, loser_never_sat=False, tournament_rated=True)
    assert (on_time.kind, on_time.result, on_time.score.rated) == (K.NORMAL, GameResult.BLACK_WINS, True)
    both = result_of_abandon(tournament_rated=True)
    assert (both.kind, both.result, both.score.white_points, both.score.black_points) == (K.BOTH_ABSENT,
                                                                                           GameResult.BOTH_LOSE, 0, 0)
    relayed = result_of_finish(GameResult.BOTH_LOSE, Termination.BOTH_ABSENT, white_sat=False, black_sat=False,
                               tournament_rated=True)
    assert relayed.kind is K.BOTH_ABSENT
    closed = closing_draw(white_sat=True, black_sat=True, tournament_rated=True)
    assert (closed.kind, closed.score.white_points, closed.result) == (K.CLOSED_DRAW, 1, GameResult.DRAW)
    assert closed.score.rated
    with pytest.raises(ValueError):
        result_of_finish(GameResult.DRAW, Termination.NEVER_SAT, white_sat=True, black_sat=False, tournament_rated=True)
    with pytest.raises(FlowError):
        result_of_finish(GameResult.WHITE_WINS, Termination.BOTH_ABSENT, white_sat=False, black_sat=False,
                         tournament_rated=True)


def test_busy_players_forfeit_and_both_busy_is_zero_zero() -> None:
    """T-18, T-19."""
    assert busy_forfeit(False, False, tournament_rated=True) is None
    white_busy = busy_forfeit(True, False, tournament_rated=True)
    assert (white_busy.kind, white_busy.result, white_busy.score.rated) == (K.BUSY_FORFEIT, GameResult.BLACK_WINS,
                                                                              False)
    assert busy_forfeit(False, True, tournament_rated=True).result is GameResult.WHITE_WINS
    both = busy_forfeit(True, True, tournament_rated=True)
    assert (both.kind, both.score.white_points, both.score.black_points) == (K.BOTH_ABSENT, 0, 0)


@pytest.mark.parametrize(("white_sat", "black_sat"), [(True, False), (False, True), (False, False)])
def test_a_closing_draw_where_someone_never_sat_is_unrated(white_sat: bool, black_sat: bool) -> None:
    """T-15 draws it (1-1 whoever sat); R-3: rated only if both made a move, as the play site's own close."""
    closed = closing_draw(white_sat=white_sat, black_sat=black_sat, tournament_rated=True)
    reported = result_of_finish(
        GameResult.DRAW, Termination.CLOSED_AT_DEADLINE, white_sat=white_sat, black_sat=black_sat, tournament_rated=True
    )
    assert closed == reported
    assert (closed.kind, closed.score.white_points, closed.score.black_points) == (K.CLOSED_DRAW, 1, 1)
    assert not closed.score.rated


def test_what_comes_after_a_round() -> None:
    """T-9: pair until the last round; T-15: no new round after the announced end, everything closes 10 min later."""
    closes = NOW + timedelta(hours=2)
    assert next_step(2, 5, 3, NOW, closes) is NextStep.WAIT
    assert next_step(2, 5, 0, NOW, closes) is NextStep.PAIR
    assert next_step(0, 5, 0, NOW, closes) is NextStep.PAIR
    assert next_step(5, 5, 0, NOW, closes) is NextStep.FINISH
    assert next_step(2, 5, 0, closes, closes) is NextStep.FINISH
    assert next_step(2, 5, 4, closes + timedelta(minutes=9), closes) is NextStep.WAIT
    assert next_step(2, 5, 4, closing_deadline(closes), closes) is NextStep.FINISH
    assert closing_deadline(closes) == closes + timedelta(minutes=10)


def test_time_controls_and_minimum_ratings() -> None:
    """R-6 (live controls only), R-2 (a minimum, never a maximum)."""
    check_live_time_control(180, 2)
    for base, increment in ((0, 0), (-1, 2), (5 * 3600, 0), (60, 600)):
        with pytest.raises(FlowError):
            check_live_time_control(base, increment)
    assert meets_minimum_rating(1600, 1600) and not meets_minimum_rating(1599.9, 1600)
    assert meets_minimum_rating(900, None) and meets_minimum_rating(2900, 1000)


@given(st.integers(min_value=4, max_value=19), st.booleans())
def test_round_robins_of_any_size_meet_everyone_once(n: int, double: bool) -> None:
    """T-2, T-9, T-14 for every round robin size."""
    plan = decide_start(n, 4, 20, extra_round=False, home_and_away=double).plan
    draws, history, byes = play(plan.format, seats(n), plan.rounds, plan.games_per_pairing)
    pairs = {frozenset((g.white, g.black)) for g in history}
    assert len(pairs) == n * (n - 1) // 2
    assert len(history) == len(pairs) * plan.games_per_pairing
    rows = final_standings(plan.format, seats(n), history, byes)
    assert sum(r.points for r in rows) == 2 * len(history) + sum(b.points for b in byes)


def test_a_tournament_with_open_games_closes_only_at_its_deadline() -> None:
    """T-15: the announced end plus 10 minutes; with nothing open it closes at once."""
    closes = NOW + timedelta(hours=2)
    assert may_close(0, NOW, closes)
    assert not may_close(3, closes + timedelta(minutes=9, seconds=59), closes)
    assert may_close(3, closes + timedelta(minutes=10), closes)


def test_the_close_draws_every_open_game_rated_only_where_both_sat() -> None:
    """T-15, R-3: each open game a 1-1 draw, in the order given; the note says what the close did."""
    games = [OpenGame("g1", True, True), OpenGame("g2", True, False)]
    closing = close_tournament(games, 3, 5, tournament_rated=True)
    assert [(game.game_id, scored.kind, scored.result, scored.score.rated) for game, scored in closing.draws] == [
        ("g1", K.CLOSED_DRAW, GameResult.DRAW, True), ("g2", K.CLOSED_DRAW, GameResult.DRAW, False)]
    assert closing.note == "closed at the announced end + 10 minutes; 2 open games scored as draws (T-15)"
    one = close_tournament(games[:1], 3, 5, tournament_rated=False)
    assert one.note.endswith("1 open game scored as draws (T-15)") and not one.draws[0][1].score.rated


def test_a_close_between_rounds_plays_no_further_round_and_keeps_a_note_it_is_given() -> None:
    """T-15: rounds not yet started are not played; T-13: a round that cannot be paired says so itself."""
    assert close_tournament([], 2, 5, tournament_rated=True).note == (
        "the announced duration ended after round 2 of 5; rounds not yet started are not played (T-15)")
    assert close_tournament([], 5, 5, tournament_rated=True).note == ""
    unpairable = "round 3 cannot be paired (T-13)"
    assert close_tournament([], 2, 5, tournament_rated=True, note=unpairable).note == unpairable
    assert (
        close_tournament([OpenGame("g", True, True)], 2, 5, tournament_rated=True, note=unpairable).note == unpairable
    )
