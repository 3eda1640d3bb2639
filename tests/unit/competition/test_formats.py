"""Format and round count fixed at the start (T-1..T-3, T-9..T-12)."""

from __future__ import annotations

import itertools
import math

import pytest

from arbiter.competition.formats import (
    Format,
    FormatError,
    plan_rounds,
    round_robin_round_count,
    swiss_round_count,
    tournament_format,
    validate_entrants,
    validate_threshold,
)

# T-9 as the SPEC tabulates it.
SWISS_ROUNDS = [(7, 8, 5), (9, 16, 6), (17, 32, 7), (33, 64, 8), (65, 128, 9), (129, 200, 10)]


@pytest.mark.parametrize(("low", "high", "rounds"), SWISS_ROUNDS)
def test_t9_swiss_round_table(low: int, high: int, rounds: int) -> None:
    for n in range(low, high + 1):
        assert swiss_round_count(n) == rounds
        assert swiss_round_count(n) == math.ceil(math.log2(n)) + 2


def test_t9_round_robin_rounds() -> None:
    for n in range(2, 20):
        assert round_robin_round_count(n) == (n - 1 if n % 2 == 0 else n)


@pytest.mark.parametrize("threshold", [7, 8, 13, 20])
def test_t1_valid_thresholds(threshold: int) -> None:
    assert validate_threshold(threshold) == threshold


@pytest.mark.parametrize("threshold", [-1, 0, 6, 21, 25])
def test_t1_invalid_thresholds(threshold: int) -> None:
    with pytest.raises(FormatError, match=rf"threshold {threshold} is outside 7\.\.20 \(T-1\)"):
        validate_threshold(threshold)


@pytest.mark.parametrize("entrants", [-3, 0, 3, 201, 1000])
def test_t3_entrant_counts_no_tournament_starts_with(entrants: int) -> None:
    with pytest.raises(FormatError, match=r"\(T-3\)"):
        validate_entrants(entrants)
    with pytest.raises(FormatError, match=r"\(T-3\)"):
        plan_rounds(entrants)


def test_t2_format_exhaustive() -> None:
    for threshold, n in itertools.product(range(7, 21), range(4, 201)):
        expected = Format.ROUND_ROBIN if n < threshold else Format.SWISS
        assert tournament_format(n, threshold) is expected
    # A round robin never has more than 19 entrants.
    assert tournament_format(19, 20) is Format.ROUND_ROBIN
    assert tournament_format(20, 20) is Format.SWISS


def test_plan_exhaustive_over_every_start() -> None:
    """Every (n, threshold, extra, double) a start can see, checked against the rules."""
    for threshold, n, extra, double in itertools.product(
        range(7, 21), range(4, 201), (False, True), (False, True)
    ):
        plan = plan_rounds(n, threshold, extra_round=extra, double=double)
        assert plan.rules[:2] == ("T-2", "T-9")
        assert len(plan.rules) == len(plan.reasons)
        for rule, reason in zip(plan.rules, plan.reasons, strict=True):
            assert reason.endswith(f"({rule})")
        if n < threshold:
            assert plan.format is Format.ROUND_ROBIN
            # T-11 is ignored for round robin.
            assert plan.rounds == round_robin_round_count(n)
            # T-10 and T-12.
            assert plan.games_per_pairing == (2 if n == 4 or double else 1)
            assert ("T-10" in plan.rules) == (n == 4)
        else:
            assert plan.format is Format.SWISS
            assert plan.rounds == swiss_round_count(n) + (1 if extra else 0)
            # T-11: never more rounds than n-1 (no repeated opponent).
            assert plan.rounds <= n - 1
            assert plan.games_per_pairing == (2 if double else 1)
            assert "T-10" not in plan.rules
        assert ("T-11" in plan.rules) == extra
        assert ("T-12" in plan.rules) == double
        assert plan.is_double == (plan.games_per_pairing == 2)


def test_t10_four_entrants_double_round_robin() -> None:
    plan = plan_rounds(4)
    assert (plan.format, plan.rounds, plan.games_per_pairing) == (Format.ROUND_ROBIN, 3, 2)
    assert plan.rules == ("T-2", "T-9", "T-10")


def test_t11_extra_round_limits() -> None:
    assert plan_rounds(7, extra_round=True).rounds == 6  # 5 + 1 == n - 1, allowed
    assert plan_rounds(200, 20, extra_round=True).rounds == 11  # SPEC: 11 with T-11
    ignored = plan_rounds(6, extra_round=True)
    assert ignored.rounds == 5 and "ignored" in ignored.reasons[-1]


def test_t12_double_swiss_keeps_rounds() -> None:
    plan = plan_rounds(30, 7, double=True)
    assert (plan.format, plan.rounds, plan.games_per_pairing) == (Format.SWISS, 7, 2)
    assert plan.rules == ("T-2", "T-9", "T-12")


def test_invalid_threshold_reaches_plan() -> None:
    with pytest.raises(FormatError, match=r"\(T-1\)"):
        plan_rounds(10, 25)
