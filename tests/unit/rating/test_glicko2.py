"""Glicko-2 (R-5): Glickman's worked example, the per-game update and inactivity."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.rating import (
    DEFAULT_TAU,
    MAX_RD,
    MIN_RD,
    RATING_PERIODS_PER_DAY,
    Glicko2Error,
    PeriodGame,
    Rating,
    decay,
    rate,
    rate_game,
    rating_periods,
)
from arbiter.rating.glicko2 import rate_one
from arbiter.vocabulary import Score

SCALE = 173.7178
GLICKMAN_PLAYER = Rating(1500, 200, 0.06)
GLICKMAN_GAMES = [PeriodGame(1400, 30, 1), PeriodGame(1550, 100, 0), PeriodGame(1700, 300, 0)]


def test_glickmans_worked_example() -> None:
    new = rate(GLICKMAN_PLAYER, GLICKMAN_GAMES, tau=0.5)
    # The paper prints mu' = -0.2069 and phi' = 0.8722 on the Glicko-2 scale ...
    assert round((new.rating - 1500) / SCALE, 4) == -0.2069
    assert round(new.rd / SCALE, 4) == 0.8722
    # ... then r' = 173.7178 x (-0.2069) + 1500 = 1464.06, RD' = 151.52, sigma' = 0.05999.
    # Unrounded, r' is 1464.0507: the paper's 1464.06 comes from the rounded mu'.
    assert round(SCALE * round((new.rating - 1500) / SCALE, 4) + 1500, 2) == 1464.06
    assert new.rating == pytest.approx(1464.06, abs=0.01)
    assert round(new.rd, 2) == 151.52
    assert math.floor(new.vol * 1e5) / 1e5 == 0.05999
    assert new.vol == pytest.approx(0.05999, abs=1e-5)


def test_glickmans_example_is_stable_to_many_decimals() -> None:
    # Regression values of this implementation (Illinois algorithm, epsilon 1e-6).
    new = rate(GLICKMAN_PLAYER, GLICKMAN_GAMES, tau=0.5)
    assert new.rating == pytest.approx(1464.05067, abs=1e-5)
    assert new.rd == pytest.approx(151.51652, abs=1e-5)
    assert new.vol == pytest.approx(0.0599960, abs=1e-7)


def test_defaults_are_the_new_player() -> None:
    # new players start at 1500 / 350 / 0.06.
    assert Rating() == Rating(1500.0, 350.0, 0.06)
    assert Rating().is_provisional
    assert DEFAULT_TAU == 0.75


def test_provisional_threshold_is_lichess() -> None:
    assert Rating(1500, 110.0, 0.06).is_provisional
    assert not Rating(1500, 109.99, 0.06).is_provisional


def test_no_games_only_grows_the_deviation() -> None:
    # Glickman: a player who does not compete gets phi' = sqrt(phi^2 + sigma^2).
    new = rate(GLICKMAN_PLAYER, [], tau=0.5)
    assert new.rating == 1500
    assert new.vol == 0.06
    assert new.rd == pytest.approx(SCALE * math.sqrt((200 / SCALE) ** 2 + 0.06**2))


def test_rate_game_is_one_period_with_one_game() -> None:
    opponent = Rating(1400, 30, 0.06)
    assert rate_game(GLICKMAN_PLAYER, opponent, Score.WIN, tau=0.5) == rate(
        GLICKMAN_PLAYER, [PeriodGame(1400, 30, 1.0)], tau=0.5
    )
    assert rate_game(GLICKMAN_PLAYER, opponent, 0.5) == rate(
        GLICKMAN_PLAYER, [PeriodGame(1400, 30, 0.5)]
    )


def test_draw_between_equals_changes_no_rating() -> None:
    player = Rating(1700, 80, 0.06)
    new = rate_game(player, player, Score.DRAW, elapsed_periods=0.0)
    assert new.rating == pytest.approx(1700)
    assert new.rd < player.rd


def test_elapsed_periods_scale_glickmans_step_six() -> None:
    # Per-game periods: games played back to back add (almost) no uncertainty; a long break
    # adds more; exactly one period is Glickman's system unchanged.
    player, opponent = Rating(1600, 60, 0.06), Rating(1600, 60, 0.06)
    back_to_back = rate_game(player, opponent, Score.WIN, elapsed_periods=0.0)
    one_period = rate_game(player, opponent, Score.WIN, elapsed_periods=1.0)
    a_year_off = rate_game(
        player, opponent, Score.WIN, elapsed_periods=rating_periods(timedelta(days=365))
    )
    assert back_to_back.rd < one_period.rd < a_year_off.rd
    assert back_to_back.rating < one_period.rating < a_year_off.rating


def test_minimum_deviation() -> None:
    player = Rating(1600, 46, 0.06)
    for _ in range(200):
        player = rate_game(player, Rating(1600, 46, 0.06), Score.DRAW, elapsed_periods=0.0)
    assert player.rd == pytest.approx(MIN_RD)


def test_inactivity_grows_the_deviation_up_to_350() -> None:
    player = Rating(1800, 50, 0.06)
    a_month = decay(player, rating_periods(timedelta(days=30)))
    a_year = decay(player, rating_periods(timedelta(days=365)))
    assert player.rd < a_month.rd < a_year.rd < MAX_RD
    assert a_year.rating == 1800 and a_year.vol == 0.06
    assert decay(player, 1e9).rd == MAX_RD
    assert decay(player, 0).rd == pytest.approx(50)


def test_certain_results_carry_no_information() -> None:
    # Opponents thousands of points away: no overflow, the game counts as no game.
    strong, weak = Rating(1e6, 50, 0.06), Rating(-1e6, 50, 0.06)
    assert rate_game(strong, weak, Score.LOSS) == decay(strong, 1.0)
    assert rate_game(weak, strong, Score.WIN) == decay(weak, 1.0)


def test_rating_periods_follow_lichess() -> None:
    assert rating_periods(timedelta(days=1)) == pytest.approx(RATING_PERIODS_PER_DAY)
    assert rating_periods(timedelta(0)) == 0
    with pytest.raises(Glicko2Error):
        rating_periods(timedelta(seconds=-1))


@pytest.mark.parametrize(
    ("player", "results", "kwargs", "message"),
    [
        (Rating(1500, 0, 0.06), [], {}, "deviation"),
        (Rating(1500, 351, 0.06), [], {}, "at most 350"),
        (Rating(1500, 200, 0), [], {}, "volatility"),
        (Rating(math.nan, 200, 0.06), [], {}, "finite"),
        (Rating(), [PeriodGame(1500, 0, 1)], {}, "opponent's deviation"),
        (Rating(), [PeriodGame(1500, 50, 1.5)], {}, "score"),
        (Rating(), [PeriodGame(1500, 50, 1)], {"tau": 0}, "tau"),
        (Rating(), [PeriodGame(1500, 50, 1)], {"elapsed_periods": -1}, "periods"),
    ],
)
def test_bad_inputs(player: Rating, results: list[PeriodGame], kwargs: dict, message: str) -> None:
    with pytest.raises(Glicko2Error, match=message):
        rate(player, results, **kwargs)
    assert issubclass(Glicko2Error, ValueError)


ratings = st.builds(
    Rating,
    rating=st.one_of(st.floats(0, 3500), st.floats(-2000, 10_000)),
    rd=st.floats(30, MAX_RD),
    vol=st.floats(0.01, 0.2),
)
opponents = st.builds(
    PeriodGame,
    opponent_rating=st.one_of(st.floats(0, 3500), st.floats(-2000, 10_000)),
    opponent_rd=st.floats(30, MAX_RD),
    score=st.sampled_from([0.0, 0.5, 1.0]),
)
taus = st.floats(0.3, 1.2)
periods = st.one_of(st.just(1.0), st.floats(0, 500))


@given(ratings, ratings, taus, periods)
def test_a_win_never_lowers_a_rating(
    player: Rating, opponent: Rating, tau: float, p: float
) -> None:
    new = rate_game(player, opponent, Score.WIN, tau=tau, elapsed_periods=p)
    assert new.rating >= player.rating
    lost = rate_game(player, opponent, Score.LOSS, tau=tau, elapsed_periods=p)
    assert lost.rating <= player.rating


@given(ratings, st.lists(opponents, max_size=15), taus, periods)
def test_deviation_never_above_350(
    player: Rating, results: list[PeriodGame], tau: float, p: float
) -> None:
    new = rate(player, results, tau=tau, elapsed_periods=p)
    assert 0 < new.rd <= MAX_RD
    assert new.vol > 0
    assert math.isfinite(new.rating)
    # games bring the RD down to the floor at most (games with no information leave it grown)
    assert new.rd >= min(MIN_RD, player.rd)
    assert decay(new, p).rd <= MAX_RD


@given(ratings, st.lists(opponents, min_size=1, max_size=15), taus)
def test_deterministic(player: Rating, results: list[PeriodGame], tau: float) -> None:
    assert rate(player, results, tau=tau) == rate(player, list(results), tau=tau)


@given(ratings, opponents, taus, periods)
def test_rate_one_is_rate_with_one_game_to_the_last_bit(
    player: Rating, result: PeriodGame, tau: float, p: float
) -> None:
    # The service's fast path must not drift from the reference by even one ulp.
    expected = rate(player, [result], tau=tau, elapsed_periods=p)
    assert rate_one(
        player.rating, player.rd, player.vol, result.opponent_rating, result.opponent_rd, result.score,
        tau=tau, elapsed_periods=p,
    ) == (expected.rating, expected.rd, expected.vol)


def test_rate_one_refuses_what_rate_refuses() -> None:
    with pytest.raises(Glicko2Error):
        rate_one(1500, 0.0, 0.06, 1500, 100, 1.0)
    with pytest.raises(Glicko2Error):
        rate_one(1500, 100, 0.06, 1500, 100, 1.5)
    with pytest.raises(Glicko2Error):
        rate_one(1500, 100, 0.06, float("nan"), 100, 1.0)
    with pytest.raises(Glicko2Error):
        rate_one(1500, 100, 0.06, 1500, 100, 1.0, tau=0.0)
