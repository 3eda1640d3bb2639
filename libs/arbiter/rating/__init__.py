"""Ratings: Glicko-2 per (player, variant, speed) (R-5) and which games are rated (R-1, R-3, R-4).

Pure and stdlib-only; the rating service stores one `Rating` per (player, variant, speed)
and the time of that rating's last rated game (for the inactivity rule).
"""

from arbiter.rating.glicko2 import (
    DEFAULT_RATING,
    DEFAULT_RD,
    DEFAULT_TAU,
    DEFAULT_VOL,
    MAX_RD,
    MIN_RD,
    PROVISIONAL_RD,
    RATING_PERIODS_PER_DAY,
    Glicko2Error,
    PeriodGame,
    Rating,
    decay,
    rate,
    rate_game,
    rating_periods,
)
from arbiter.rating.rated import RatedReason, competition_is_rated, is_game_rated

__all__ = [
    "DEFAULT_RATING",
    "DEFAULT_RD",
    "DEFAULT_TAU",
    "DEFAULT_VOL",
    "MAX_RD",
    "MIN_RD",
    "PROVISIONAL_RD",
    "RATING_PERIODS_PER_DAY",
    "Glicko2Error",
    "PeriodGame",
    "RatedReason",
    "Rating",
    "competition_is_rated",
    "decay",
    "is_game_rated",
    "rate",
    "rate_game",
    "rating_periods",
]
