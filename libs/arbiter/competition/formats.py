"""Tournament format and round count, fixed at the start from the entrants (T-1..T-3, T-9..T-12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from arbiter.competition.types import Format

__all__ = [
    "CAPACITY_MAX",
    "CAPACITY_MIN",
    "DEFAULT_THRESHOLD",
    "Format",
    "FormatError",
    "RoundPlan",
    "THRESHOLD_MAX",
    "THRESHOLD_MIN",
    "plan_rounds",
    "round_robin_round_count",
    "swiss_round_count",
    "tournament_format",
    "validate_entrants",
    "validate_threshold",
]

# T-1
DEFAULT_THRESHOLD: Final = 7
THRESHOLD_MIN: Final = 7
THRESHOLD_MAX: Final = 20
# T-3: nobody can start with fewer than 4 (the minimum is never below 4) nor exceed 200.
CAPACITY_MIN: Final = 4
CAPACITY_MAX: Final = 200
# T-10
DOUBLE_ROUND_ROBIN_ENTRANTS: Final = 4


class FormatError(ValueError):
    """A threshold or entrant count outside what the SPEC allows."""


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """What the start fixes: format, rounds, games per pairing, and why."""

    format: Format
    rounds: int
    games_per_pairing: int
    # SPEC rule numbers that decided, in the order they were applied.
    rules: tuple[str, ...]
    # One readable sentence per rule, same order.
    reasons: tuple[str, ...]

    @property
    def is_double(self) -> bool:
        """Does every pairing play home and away (T-10, T-12)?"""
        return self.games_per_pairing == 2


def validate_threshold(threshold: int) -> int:
    """Return the threshold if T-1 allows it (7..20), else raise FormatError."""
    if not THRESHOLD_MIN <= threshold <= THRESHOLD_MAX:
        raise FormatError(f"threshold {threshold} is outside {THRESHOLD_MIN}..{THRESHOLD_MAX} (T-1)")
    return threshold


def validate_entrants(entrants: int) -> int:
    """Return the entrant count if a tournament can start with it (T-3: 4..200), else raise FormatError."""
    if entrants < CAPACITY_MIN:
        raise FormatError(
            f"{entrants} entrants cannot start a tournament: the minimum is never below "
            f"{CAPACITY_MIN}; with fewer it cancels itself (T-3)"
        )
    if entrants > CAPACITY_MAX:
        raise FormatError(f"{entrants} entrants is above the largest capacity, {CAPACITY_MAX} (T-3)")
    return entrants


def tournament_format(entrants: int, threshold: int = DEFAULT_THRESHOLD) -> Format:
    """Round robin below the threshold, Swiss from it on (T-2)."""
    validate_threshold(threshold)
    validate_entrants(entrants)
    return Format.ROUND_ROBIN if entrants < threshold else Format.SWISS


def round_robin_round_count(entrants: int) -> int:
    """n-1 rounds for even n, n for odd n, where one entrant rests each round (T-9, T-8)."""
    if entrants < 2:
        raise FormatError(f"a round robin needs at least 2 entrants, not {entrants}")
    return entrants - 1 if entrants % 2 == 0 else entrants


def swiss_round_count(entrants: int) -> int:
    """ceil(log2(n)) + 2: 7-8 entrants 5 rounds, 9-16 6, ..., 129-200 10 (T-9)."""
    if entrants < 2:
        raise FormatError(f"a Swiss needs at least 2 entrants, not {entrants}")
    # bit_length is the exact ceil(log2(n)) for integers; math.log2 can round wrongly near powers of 2.
    return (entrants - 1).bit_length() + 2


def plan_rounds(
    entrants: int,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    extra_round: bool = False,
    double: bool = False,
) -> RoundPlan:
    """Fix the format, round count and games per pairing at the start (T-2, T-9..T-12)."""
    fmt = tournament_format(entrants, threshold)
    rules: list[str] = ["T-2"]
    if fmt is Format.ROUND_ROBIN:
        reasons = [f"{entrants} entrants < threshold {threshold}: round robin (T-2)"]
        rounds = round_robin_round_count(entrants)
        parity = "even" if entrants % 2 == 0 else "odd, one bye per round"
        reasons.append(f"round robin of {entrants} ({parity}): {rounds} rounds (T-9)")
    else:
        reasons = [f"{entrants} entrants >= threshold {threshold}: Swiss (T-2)"]
        rounds = swiss_round_count(entrants)
        reasons.append(f"Swiss of {entrants}: ceil(log2({entrants})) + 2 = {rounds} rounds (T-9)")
    rules.append("T-9")

    games_per_pairing = 1
    if fmt is Format.ROUND_ROBIN and entrants == DOUBLE_ROUND_ROBIN_ENTRANTS:
        games_per_pairing = 2
        rules.append("T-10")
        reasons.append(
            f"exactly {DOUBLE_ROUND_ROBIN_ENTRANTS} entrants: always double, "
            f"{rounds} rounds of two games per pairing (T-10)"
        )

    if extra_round:
        rules.append("T-11")
        if fmt is not Format.SWISS:
            reasons.append("extra round ignored: the start produced a round robin (T-11)")
        elif rounds + 1 <= entrants - 1:
            rounds += 1
            reasons.append(f"extra round: {rounds} rounds (T-11)")
        else:
            # More rounds than n-1 would force someone to meet an opponent twice (T-13).
            reasons.append(
                f"extra round ignored: {rounds + 1} rounds would exceed n-1 = {entrants - 1} (T-11)"
            )

    if double:
        rules.append("T-12")
        if games_per_pairing == 2:
            reasons.append("home and away requested: already double by T-10 (T-12)")
        else:
            games_per_pairing = 2
            reasons.append(
                "home and away: two games per pairing in the same round, colours reversed (T-12)"
            )

    return RoundPlan(
        format=fmt,
        rounds=rounds,
        games_per_pairing=games_per_pairing,
        rules=tuple(rules),
        reasons=tuple(reasons),
    )
