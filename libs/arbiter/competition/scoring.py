"""Points and rated-ness of round games and byes (T-7, T-8, T-12, T-15..T-19, R-3).

How each result kind enters the tie-breaks (T-21, T-22) is decided here, once, so that
standings and explanations agree:

- The SPEC excludes only the bye from tie-breaks (T-8, T-21: "the bye is not an opponent").
  Every other pairing, whatever its result kind, makes the two entrants opponents for
  Buchholz: T-20 keeps absent players in the draw, and there is no FIDE "virtual opponent"
  in our rules, so dropping a forfeited opponent would only shrink the present player's BH.
- T-18 gives the present player "2 points (a win)", and T-16 makes the absent player "lose
  on time": both are wins for the present player in the win count and in Sonneborn-Berger.
  FIDE treats forfeits as unplayed for tie-breaks; the SPEC, which wins over the seeds and
  FIDE, calls them wins, so they count as wins here.
- T-19 (both absent, 0-0) is a loss for both: opponents for BH, nothing for SB or wins.
- T-15 (drawn at the close) is a draw like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from arbiter.rating.rated import is_game_rated
from arbiter.vocabulary import ResultKind, Side

__all__ = [
    "BYE_POINTS_PER_GAME",
    "DRAW_POINTS",
    "LOSS_POINTS",
    "GameScore",
    "ScoringError",
    "WIN_POINTS",
    "bye_points",
    "is_valid_score",
    "score_game",
]

# T-7 (AR-4 uses the same base values).
WIN_POINTS: Final = 2
DRAW_POINTS: Final = 1
LOSS_POINTS: Final = 0
# T-8: a bye is worth one game won, or two when every pairing plays two (T-12).
BYE_POINTS_PER_GAME: Final = WIN_POINTS

# Kinds in which nobody wins, and the points each side then gets.
_NO_WINNER_POINTS: Final = {
    ResultKind.BOTH_ABSENT: LOSS_POINTS,  # T-19: 0-0, no automatic draw
    ResultKind.CLOSED_DRAW: DRAW_POINTS,  # T-15: every still-open game is a draw
}
# Kinds that need a winner: the present player wins (T-16, T-18).
_WINNER_REQUIRED: Final = frozenset({ResultKind.NEVER_SAT, ResultKind.BUSY_FORFEIT})


class ScoringError(ValueError):
    """A result that the SPEC's scoring cannot produce."""


@dataclass(frozen=True, slots=True)
class GameScore:
    """The scored outcome of one round game."""

    kind: ResultKind
    # None: a draw (1-1) or both absent (0-0).
    winner: Side | None
    white_points: int
    black_points: int
    # Whether this game moves ratings.
    rated: bool

    def points(self, side: Side) -> int:
        """Points scored by one side of this game."""
        return self.white_points if side is Side.WHITE else self.black_points


def score_game(
    kind: ResultKind,
    winner: Side | None = None,
    *,
    tournament_rated: bool = True,
    both_sat: bool = True,
) -> GameScore:
    """Score one game: win 2, draw 1, loss 0 per game (T-7, T-12) and the absence kinds (T-15..T-19).

    `winner` is None for a draw; for NEVER_SAT and BUSY_FORFEIT it is the present player.
    `both_sat` is False when one side never moved (R-3), whatever the kind.
    """
    if kind in _WINNER_REQUIRED and winner is None:
        raise ScoringError(f"a {kind} game needs a winner: the player who was present (T-16, T-18)")
    if kind in _NO_WINNER_POINTS and winner is not None:
        raise ScoringError(f"a {kind} game has no winner (T-15, T-19)")
    if winner is None:
        each = _NO_WINNER_POINTS.get(kind, DRAW_POINTS)
        white_points = black_points = each
    elif winner is Side.WHITE:
        white_points, black_points = WIN_POINTS, LOSS_POINTS
    else:
        white_points, black_points = LOSS_POINTS, WIN_POINTS
    # T-18, T-19: one rule for every service, kept in arbiter.rating.rated.
    rated, _ = is_game_rated(tournament_rated, kind, both_sat, is_bye=False)
    return GameScore(kind, winner, white_points, black_points, rated)


def is_valid_score(kind: ResultKind, white_points: int, black_points: int) -> bool:
    """Could a game of this kind end with these points (T-7, T-15..T-19)?"""
    if kind in _NO_WINNER_POINTS:
        return white_points == black_points == _NO_WINNER_POINTS[kind]
    decisive = {(WIN_POINTS, LOSS_POINTS), (LOSS_POINTS, WIN_POINTS)}
    if kind in _WINNER_REQUIRED:
        return (white_points, black_points) in decisive
    return (white_points, black_points) in decisive | {(DRAW_POINTS, DRAW_POINTS)}


def bye_points(games_per_pairing: int = 1) -> int:
    """Points of a bye: 2, or 4 when rounds are double (T-8, T-12)."""
    if games_per_pairing not in (1, 2):
        raise ScoringError(f"games per pairing is 1 or 2 (T-12), not {games_per_pairing}")
    return BYE_POINTS_PER_GAME * games_per_pairing
