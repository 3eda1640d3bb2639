"""The words every rules package shares: a side, a game's result, how it ended, how it counts, a player's score.

Pure and stdlib-only, and it imports no other arbiter module: it is the root of the packages'
dependency graph (draughts, clocks, rating, openings, competition all read it). The names mirror
the contracts (common.proto's Color, GameResult and Termination), so that a service translates
each protobuf value to one word here and back, and every package means the same thing by it.
"""

from __future__ import annotations

import enum
from typing import Final


class Side(enum.StrEnum):
    """One of the two players of a game. WHITE sits at the bottom of the diagram; which side moves
    first depends on the variant."""

    WHITE = "white"
    BLACK = "black"

    @property
    def other(self) -> Side:
        """The opposite side."""
        return Side.BLACK if self is Side.WHITE else Side.WHITE

    @property
    def letter(self) -> str:
        """The FEN letter of this side: "W" or "B"."""
        return "W" if self is Side.WHITE else "B"


class Score(enum.Enum):
    """One player's result in one game; the value is the score Glicko-2 counts (1, 1/2, 0)."""

    WIN = 1.0
    DRAW = 0.5
    LOSS = 0.0


class GameResult(enum.StrEnum):
    """The result of a finished game, as the play site reports it (GameResult in the contracts)."""

    WHITE_WINS = "white_wins"
    BLACK_WINS = "black_wins"
    DRAW = "draw"
    # T-19: both absent, 0-0; nobody wins.
    BOTH_LOSE = "both_lose"

    @classmethod
    def won_by(cls, winner: Side | None) -> GameResult:
        """The result in which `winner` won; a draw for None."""
        if winner is None:
            return cls.DRAW
        return cls.WHITE_WINS if winner is Side.WHITE else cls.BLACK_WINS

    @property
    def winner(self) -> Side | None:
        """The side that won; None for a draw and for 0-0."""
        return _WINNER.get(self)

    def score_of(self, side: Side) -> Score:
        """What this result is for the player of `side` (0-0 is a loss for both)."""
        if self is GameResult.DRAW:
            return Score.DRAW
        return Score.WIN if self.winner is side else Score.LOSS

    @property
    def pdn(self) -> str:
        """The PDN result tag, as on a score sheet: "1-0", "0-1", "1/2-1/2" or "0-0"."""
        return _PDN[self]

    @classmethod
    def from_pdn(cls, tag: str) -> GameResult:
        """The result a PDN result tag names; ValueError for any other text."""
        try:
            return _FROM_PDN[tag]
        except KeyError:
            raise ValueError(f"{tag!r} is not a result tag: one of {', '.join(_FROM_PDN)}") from None


_WINNER: Final = {GameResult.WHITE_WINS: Side.WHITE, GameResult.BLACK_WINS: Side.BLACK}
_PDN: Final = {
    GameResult.WHITE_WINS: "1-0",
    GameResult.BLACK_WINS: "0-1",
    GameResult.DRAW: "1/2-1/2",
    GameResult.BOTH_LOSE: "0-0",
}
_FROM_PDN: Final = {tag: result for result, tag in _PDN.items()}


class Termination(enum.StrEnum):
    """How a game ended (Termination in the contracts): at the board, on the clock, or by a competition rule."""

    # The side to move had no legal move (blocked, or no pieces left): it lost.
    NO_MOVES = "no_moves"
    RESIGNATION = "resignation"
    DRAW_AGREED = "draw_agreed"
    # A variant's draw rule: repetition, a move limit, an endgame count.
    DRAW_RULE = "draw_rule"
    # T-16, TB-4: the clock reached zero.
    TIME = "time"
    # T-17: dropped after the first move and not back within 30 s.
    DISCONNECTION = "disconnection"
    # T-16, R-3: lost on time never having moved.
    NEVER_SAT = "never_sat"
    # T-18: already playing another game; the game was not opened.
    BUSY_FORFEIT = "busy_forfeit"
    # T-19: both absent.
    BOTH_ABSENT = "both_absent"
    # T-15: still open when the tournament closed.
    CLOSED_AT_DEADLINE = "closed_at_deadline"


class ResultKind(enum.StrEnum):
    """How a game's result counts for points, tie-breaks and ratings (T-7, T-15..T-19, R-3).

    Every termination reached at the board or on the clock counts alike (NORMAL); the others
    each have their own scoring. `ResultKind.of` is the one translation from how a game ended.
    """

    # Played to a result (win, draw or loss), including T-17 disconnections.
    NORMAL = "normal"
    # T-16/T-17: one side never moved and lost on time; R-3: never rated.
    NEVER_SAT = "never_sat"
    # T-18: already busy in another game; the game was not opened at all.
    BUSY_FORFEIT = "busy_forfeit"
    # T-19: both absent, the round closes 0-0.
    BOTH_ABSENT = "both_absent"
    # T-15: still open when the tournament closed; scored as a draw.
    CLOSED_DRAW = "closed_draw"

    @classmethod
    def of(cls, termination: Termination | None, result: GameResult | None) -> ResultKind:
        """How a game that ended so counts: a 0-0 is both absent (T-19) whatever the termination says."""
        if result is GameResult.BOTH_LOSE:
            return cls.BOTH_ABSENT
        if termination is None:
            return cls.NORMAL
        return _KIND_OF_TERMINATION.get(termination, cls.NORMAL)


_KIND_OF_TERMINATION: Final = {
    Termination.NEVER_SAT: ResultKind.NEVER_SAT,
    Termination.BUSY_FORFEIT: ResultKind.BUSY_FORFEIT,
    Termination.BOTH_ABSENT: ResultKind.BOTH_ABSENT,
    Termination.CLOSED_AT_DEADLINE: ResultKind.CLOSED_DRAW,
}
