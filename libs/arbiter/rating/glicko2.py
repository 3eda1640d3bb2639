"""Glicko-2 (R-5), as defined in Glickman's "Example of the Glicko-2 system", pure maths.

Written here rather than taken from PyPI: libs/ is stdlib-only, and the available packages
(e.g. `glicko2`) have neither fractional rating periods for inactivity nor the RD bounds
below; the maths is ~60 lines and is checked against Glickman's worked example.

How the service uses it (the lichess way):
- every rated game is its own rating period: `rate_game` with the opponent's pre-game
  rating, called for both players;
- inactivity: Glickman's step 6 (the pre-period RD increase) is scaled by the rating periods
  elapsed since the player's previous rated game, fractional, `RATING_PERIODS_PER_DAY` per
  day (lichess's 0.21436, one period ~ 4.67 days). With exactly one period elapsed this is
  Glickman's system unchanged; between games played minutes apart the RD barely grows.
- `decay` gives the RD to show for a player who has not played for a while.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from arbiter.vocabulary import Score

# new players.
DEFAULT_RATING = 1500.0
DEFAULT_RD = 350.0
DEFAULT_VOL = 0.06
# The deviation never goes above a new player's: inactivity stops adding at 350.
MAX_RD = 350.0
# lichess's floor: with one rating period per game, many games in a short time would
# otherwise shrink the deviation towards zero and freeze the rating.
MIN_RD = 45.0
# lichess: provisional ("?") while the deviation is at least 110.
PROVISIONAL_RD = 110.0
# System constant: lichess's 0.75 (Glickman suggests 0.3..1.2; his example uses 0.5).
DEFAULT_TAU = 0.75
# lichess's rating period length for the inactivity rule.
RATING_PERIODS_PER_DAY = 0.21436
# Glickman's scale between the Glicko and Glicko-2 scales, and his convergence tolerance.
SCALE = 173.7178
CONVERGENCE = 0.000001
_MAX_ITERATIONS = 1000
# Below this the period's games carry no usable information (see `rate`).
_MIN_INFORMATION = 1e-12


class Glicko2Error(ValueError):
    """Inputs outside the Glicko-2 system (non-positive deviation or volatility, bad score)."""


@dataclass(frozen=True)
class Rating:
    """A Glicko-2 rating on the Glicko scale: rating, deviation (RD) and volatility."""

    rating: float = DEFAULT_RATING
    rd: float = DEFAULT_RD
    vol: float = DEFAULT_VOL

    @property
    def is_provisional(self) -> bool:
        """Whether the rating is still provisional (RD >= 110, as lichess)."""
        return self.rd >= PROVISIONAL_RD


@dataclass(frozen=True)
class PeriodGame:
    """One game of a rating period: the opponent's pre-game rating and RD, and the score (1, 0.5 or 0)."""

    opponent_rating: float
    opponent_rd: float
    score: float


def _check_rating(rating: Rating) -> None:
    for name, value in (("rating", rating.rating), ("rd", rating.rd), ("vol", rating.vol)):
        if not math.isfinite(value):
            raise Glicko2Error(f"{name} must be a finite number, not {value}")
    if not 0 < rating.rd <= MAX_RD:
        raise Glicko2Error(f"the deviation is above 0 and at most {MAX_RD:g}, not {rating.rd}")
    if rating.vol <= 0:
        raise Glicko2Error(f"the volatility must be positive, not {rating.vol}")


def _check_result(result: PeriodGame) -> None:
    if not (math.isfinite(result.opponent_rating) and math.isfinite(result.opponent_rd)):
        raise Glicko2Error(f"opponent rating and RD must be finite numbers: {result}")
    if result.opponent_rd <= 0:
        raise Glicko2Error(f"the opponent's deviation must be positive, not {result.opponent_rd}")
    if not 0.0 <= result.score <= 1.0:
        raise Glicko2Error(f"a score is between 0 (loss) and 1 (win), not {result.score}")


_PI_SQUARED = math.pi * math.pi


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / _PI_SQUARED)


def _expected(mu: float, mu_j: float, g_j: float) -> float:
    # The logistic written so that huge rating gaps give 0 or 1 instead of overflowing.
    z = g_j * (mu - mu_j)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


def _new_volatility(phi: float, sigma: float, delta: float, v: float, tau: float) -> float:
    """Step 5: the new volatility by the Illinois algorithm, as in Glickman's paper."""
    a = math.log(sigma * sigma)
    # f's loop invariants hoisted with the same association, and f written out in the loop
    # (it runs twice per rated game): the values are bit for bit those of the plain formula.
    excess = delta * delta - phi * phi - v
    spread = phi * phi + v
    tau2 = tau * tau
    exp = math.exp

    def f(x: float) -> float:
        ex = exp(x)
        return ex * (excess - ex) / (2.0 * (spread + ex) ** 2) - (x - a) / tau2

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(excess)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    for _ in range(_MAX_ITERATIONS):
        if abs(big_b - big_a) <= CONVERGENCE:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        ex = exp(big_c)
        f_c = ex * (excess - ex) / (2.0 * (spread + ex) ** 2) - (big_c - a) / tau2
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


def _grown_phi(phi: float, sigma: float, periods: float) -> float:
    """Step 6, scaled by elapsed periods and capped at MAX_RD."""
    return min(math.sqrt(phi * phi + periods * sigma * sigma), MAX_RD / SCALE)


def rate(
    player: Rating,
    results: Sequence[PeriodGame],
    *,
    tau: float = DEFAULT_TAU,
    elapsed_periods: float = 1.0,
) -> Rating:
    """R-5: the rating after one rating period with `results` (Glickman's steps 1-8).

    `elapsed_periods` scales step 6 (the pre-period RD increase): 1.0 is Glickman's system
    exactly; the rating service passes the periods since the player's last rated game.
    After games the RD is within [MIN_RD, MAX_RD]; with no games only the RD grows.
    """
    _check_rating(player)
    for result in results:
        _check_result(result)
    if not (math.isfinite(tau) and tau > 0):
        raise Glicko2Error(f"the system constant tau must be positive, not {tau}")
    if not (math.isfinite(elapsed_periods) and elapsed_periods >= 0):
        raise Glicko2Error(f"elapsed rating periods must be >= 0, not {elapsed_periods}")
    if not results:
        return decay(player, elapsed_periods)
    # Step 2: to the Glicko-2 scale.
    mu = (player.rating - DEFAULT_RATING) / SCALE
    phi = player.rd / SCALE
    # Steps 3 and 4: estimated variance v and improvement delta.
    gs = [_g(r.opponent_rd / SCALE) for r in results]
    es = [
        _expected(mu, (r.opponent_rating - DEFAULT_RATING) / SCALE, g_j)
        for r, g_j in zip(results, gs, strict=True)
    ]
    information = sum(g_j * g_j * e_j * (1.0 - e_j) for g_j, e_j in zip(gs, es, strict=True))
    if information < _MIN_INFORMATION:
        # Only games against opponents thousands of points away: their outcome was certain
        # and tells nothing (and v would be infinite), so they count as no game.
        return decay(player, elapsed_periods)
    v = 1.0 / information
    improvement = sum(g_j * (r.score - e_j) for r, g_j, e_j in zip(results, gs, es, strict=True))
    delta = v * improvement
    # Step 5: new volatility.
    sigma = _new_volatility(phi, player.vol, delta, v, tau)
    # Steps 6 and 7: new deviation, then new rating.
    phi_star = _grown_phi(phi, sigma, elapsed_periods)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    phi_new = max(phi_new, MIN_RD / SCALE)
    # Step 8: back to the Glicko scale. r' = r + SCALE x (mu' - mu) is the paper's formula;
    # adding the change to r keeps its sign exact (a win never lowers a rating, even by 1 ulp).
    rating_new = player.rating + SCALE * (phi_new * phi_new * improvement)
    # The clamp only absorbs rounding: phi_new <= phi_star <= MAX_RD / SCALE.
    rd_new = min(MAX_RD, SCALE * phi_new)
    return Rating(rating=rating_new, rd=rd_new, vol=sigma)


def rate_game(
    player: Rating,
    opponent: Rating,
    score: Score | float,
    *,
    tau: float = DEFAULT_TAU,
    elapsed_periods: float = 1.0,
) -> Rating:
    """R-5: `player`'s rating after one game against `opponent` (both pre-game ratings)."""
    value = score.value if isinstance(score, Score) else float(score)
    rating, rd, vol = rate_one(
        player.rating, player.rd, player.vol, opponent.rating, opponent.rd, value,
        tau=tau, elapsed_periods=elapsed_periods,
    )
    return Rating(rating, rd, vol)


def rate_one(
    rating: float, rd: float, vol: float, opponent_rating: float, opponent_rd: float, score: float,
    *, tau: float = DEFAULT_TAU, elapsed_periods: float = 1.0,
) -> tuple[float, float, float]:
    """R-5: `rate` with a single game, on plain floats: (rating, rd, vol) after the game.

    The rating service applies two of these per game; this is `rate`'s arithmetic, operation
    for operation (so the results are bit-identical), without its per-call lists and objects.
    """
    if not (math.isfinite(rating) and math.isfinite(rd) and math.isfinite(vol)):
        _check_rating(Rating(rating, rd, vol))
    if not (0 < rd <= MAX_RD and vol > 0):
        _check_rating(Rating(rating, rd, vol))
    if not (math.isfinite(opponent_rating) and math.isfinite(opponent_rd) and opponent_rd > 0
            and 0.0 <= score <= 1.0):
        _check_result(PeriodGame(opponent_rating, opponent_rd, score))
    if not (math.isfinite(tau) and tau > 0):
        raise Glicko2Error(f"the system constant tau must be positive, not {tau}")
    if not (math.isfinite(elapsed_periods) and elapsed_periods >= 0):
        raise Glicko2Error(f"elapsed rating periods must be >= 0, not {elapsed_periods}")
    mu = (rating - DEFAULT_RATING) / SCALE
    phi = rd / SCALE
    # _g and _expected written out, same operations in the same order.
    phi_j = opponent_rd / SCALE
    g_j = 1.0 / math.sqrt(1.0 + 3.0 * phi_j * phi_j / _PI_SQUARED)
    z = g_j * (mu - (opponent_rating - DEFAULT_RATING) / SCALE)
    if z >= 0:
        e_j = 1.0 / (1.0 + math.exp(-z))
    else:
        ez = math.exp(z)
        e_j = ez / (1.0 + ez)
    information = g_j * g_j * e_j * (1.0 - e_j)
    if information < _MIN_INFORMATION:
        decayed = decay(Rating(rating, rd, vol), elapsed_periods)
        return decayed.rating, decayed.rd, decayed.vol
    v = 1.0 / information
    improvement = g_j * (score - e_j)
    sigma = _new_volatility(phi, vol, v * improvement, v, tau)
    phi_star = min(math.sqrt(phi * phi + elapsed_periods * sigma * sigma), MAX_RD / SCALE)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    phi_new = max(phi_new, MIN_RD / SCALE)
    return rating + SCALE * (phi_new * phi_new * improvement), min(MAX_RD, SCALE * phi_new), sigma


def decay(player: Rating, elapsed_periods: float) -> Rating:
    """Inactivity: the RD after `elapsed_periods` rating periods without a game, capped at 350."""
    _check_rating(player)
    if not (math.isfinite(elapsed_periods) and elapsed_periods >= 0):
        raise Glicko2Error(f"elapsed rating periods must be >= 0, not {elapsed_periods}")
    phi = _grown_phi(player.rd / SCALE, player.vol, elapsed_periods)
    return Rating(rating=player.rating, rd=min(MAX_RD, SCALE * phi), vol=player.vol)


def rating_periods(elapsed: timedelta) -> float:
    """The (fractional) rating periods in `elapsed`, at RATING_PERIODS_PER_DAY."""
    if elapsed < timedelta(0):
        raise Glicko2Error(f"elapsed time must not be negative, not {elapsed}")
    return elapsed.total_seconds() / 86_400 * RATING_PERIODS_PER_DAY
