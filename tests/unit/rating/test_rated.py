"""Which games are rated (R-1, R-3, R-4, T-8, T-18, T-19)."""

from __future__ import annotations

import itertools

import pytest

from arbiter.rating import RatedReason, competition_is_rated, is_game_rated
from arbiter.vocabulary import ResultKind


def test_a_played_game_of_a_rated_competition_is_rated() -> None:
    assert is_game_rated(True, ResultKind.NORMAL, both_sat=True, is_bye=False) == (
        True,
        RatedReason.RATED,
    )


def test_friendly_competition() -> None:
    #
    assert is_game_rated(False, ResultKind.NORMAL, True, False) == (False, RatedReason.FRIENDLY)


def test_never_sat() -> None:
    # R-3, T-16: lost on time without ever arriving
    assert is_game_rated(True, ResultKind.NORMAL, False, False) == (False, RatedReason.NEVER_SAT)


def test_a_never_sat_game_is_never_rated_whatever_the_sat_flags_say() -> None:
    # R-3, T-16: the termination says one side never moved
    assert is_game_rated(True, ResultKind.NEVER_SAT, True, False) == (False, RatedReason.NEVER_SAT)


def test_busy_forfeit_is_never_rated() -> None:
    # T-18
    assert is_game_rated(True, ResultKind.BUSY_FORFEIT, False, False) == (
        False,
        RatedReason.BUSY_FORFEIT,
    )


def test_both_absent_is_never_rated() -> None:
    # T-19
    assert is_game_rated(True, ResultKind.BOTH_ABSENT, False, False) == (
        False,
        RatedReason.BOTH_ABSENT,
    )


def test_bye_is_never_rated() -> None:
    # T-8
    assert is_game_rated(True, ResultKind.NORMAL, False, True) == (False, RatedReason.BYE)


@pytest.mark.parametrize(
    ("competition_rated", "kind", "both_sat", "is_bye"),
    list(itertools.product([True, False], list(ResultKind), [True, False], [True, False])),
)
def test_exhaustive(
    competition_rated: bool, kind: ResultKind, both_sat: bool, is_bye: bool
) -> None:
    rated, reason = is_game_rated(competition_rated, kind, both_sat, is_bye)
    # rated exactly when every condition holds, and the reason agrees
    played = kind in (ResultKind.NORMAL, ResultKind.CLOSED_DRAW)
    assert rated == (competition_rated and played and both_sat and not is_bye)
    assert rated == (reason is RatedReason.RATED)


def test_reasons_are_metric_labels() -> None:
    assert {r.value for r in RatedReason} == {
        "rated",
        "friendly",
        "never_sat",
        "busy_forfeit",
        "both_absent",
        "bye",
    }


@pytest.mark.parametrize(
    ("requested", "level", "home_and_away", "rated"),
    [
        (True, None, False, True),  # free and random-move modes never switch it off
        (True, 0, False, True),  # PARI
        (True, 1, False, True),
        (True, 2, False, True),  # a single game is fair up to class 2
        (True, 3, False, False),  # created friendly instead of refused
        (True, 4, False, False),
        (True, 3, True, True),  # home and away makes it rated again
        (True, 4, True, True),
        (False, None, True, False),  # friendly stays friendly
        (False, 0, False, False),
    ],
)
def test_competition_is_rated(
    requested: bool, level: int | None, home_and_away: bool, rated: bool
) -> None:
    #
    assert competition_is_rated(requested, level, home_and_away) is rated
