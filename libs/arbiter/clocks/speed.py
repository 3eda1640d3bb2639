"""Speed classification of a time control (R-6)."""

from __future__ import annotations

import enum

# the estimated duration is base + 40 x increment, as lichess/lidraughts do.
ESTIMATED_MOVES = 40
BULLET_BELOW_S = 3 * 60
BLITZ_BELOW_S = 8 * 60
RAPID_BELOW_S = 25 * 60


class Speed(enum.StrEnum):
    """The time-control family a rating belongs to (R-5: one rating per variant and speed)."""

    BULLET = "bullet"
    BLITZ = "blitz"
    RAPID = "rapid"
    CLASSICAL = "classical"
    # every Triple Block game, whatever its schedule.
    CORRESPONDENCE = "correspondence"


class TimeControlError(ValueError):
    """A time control that cannot exist (negative base or increment)."""


def estimated_duration_s(base_s: float, inc_s: float) -> float:
    """R-6: the estimated duration of one side's clock, base + 40 x increment, in seconds."""
    if base_s < 0 or inc_s < 0:
        raise TimeControlError(
            f"time control {base_s}+{inc_s}: base and increment must be >= 0 seconds"
        )
    return base_s + ESTIMATED_MOVES * inc_s


def speed_of(base_s: float, inc_s: float) -> Speed:
    """R-6: the speed of a live Fischer time control.

    Pass the arena's own time control, never the boosted one: a boosted game keeps
    the speed of the arena (R-6, AR-5).
    """
    estimate = estimated_duration_s(base_s, inc_s)
    if estimate < BULLET_BELOW_S:
        return Speed.BULLET
    if estimate < BLITZ_BELOW_S:
        return Speed.BLITZ
    if estimate < RAPID_BELOW_S:
        return Speed.RAPID
    return Speed.CLASSICAL
