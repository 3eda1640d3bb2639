"""Per-game points, byes and rated-ness (T-7, T-8, T-12, T-15..T-19, R-3)."""

from __future__ import annotations

import itertools

import pytest

from arbiter.competition.scoring import GameScore, ScoringError, bye_points, is_valid_score, score_game
from arbiter.vocabulary import ResultKind, Side

W, B = Side.WHITE, Side.BLACK

# (kind, winner) -> (white points, black points, rated when the tournament is rated and both sat)
TABLE = {
    (ResultKind.NORMAL, W): (2, 0, True),  # T-7
    (ResultKind.NORMAL, B): (0, 2, True),
    (ResultKind.NORMAL, None): (1, 1, True),
    (ResultKind.NEVER_SAT, W): (2, 0, False),  # T-16, R-3
    (ResultKind.NEVER_SAT, B): (0, 2, False),
    (ResultKind.BUSY_FORFEIT, W): (2, 0, False),  # T-18: "2 points (a win)"
    (ResultKind.BUSY_FORFEIT, B): (0, 2, False),
    (ResultKind.BOTH_ABSENT, None): (0, 0, False),  # T-19
    (ResultKind.CLOSED_DRAW, None): (1, 1, True),  # T-15
}


@pytest.mark.parametrize(("kind", "winner"), list(TABLE))
def test_every_kind_scores_as_the_spec_says(kind: ResultKind, winner: Side | None) -> None:
    white, black, rated = TABLE[(kind, winner)]
    assert score_game(kind, winner) == GameScore(kind, winner, white, black, rated)
    assert is_valid_score(kind, white, black)


def test_table_covers_every_valid_combination() -> None:
    for kind, winner in itertools.product(ResultKind, (W, B, None)):
        if (kind, winner) in TABLE:
            continue
        with pytest.raises(ScoringError, match=r"\(T-1[5-9]"):
            score_game(kind, winner)


@pytest.mark.parametrize(("kind", "winner"), list(TABLE))
def test_rated_needs_a_rated_tournament_and_both_players_seated(kind: ResultKind, winner: Side | None) -> None:
    assert not score_game(kind, winner, tournament_rated=False).rated
    assert not score_game(kind, winner, both_sat=False).rated


def test_points_per_side() -> None:
    score = score_game(ResultKind.NORMAL, B)
    assert (score.points(W), score.points(B)) == (0, 2)


def test_valid_scores_exhaustive() -> None:
    valid = {(k, w, b) for (k, _), (w, b, _) in TABLE.items()}
    for kind, white, black in itertools.product(ResultKind, range(-1, 5), range(-1, 5)):
        assert is_valid_score(kind, white, black) == ((kind, white, black) in valid)


def test_t12_points_stay_per_game() -> None:
    # Home and away: win + draw = 3, two wins = 4 (two separate games).
    assert score_game(ResultKind.NORMAL, W).white_points + score_game(ResultKind.NORMAL).black_points == 3
    assert score_game(ResultKind.NORMAL, W).white_points + score_game(ResultKind.NORMAL, B).black_points == 4


def test_t8_bye_points() -> None:
    assert bye_points() == bye_points(1) == 2
    assert bye_points(2) == 4
    with pytest.raises(ScoringError, match=r"\(T-12\)"):
        bye_points(3)
