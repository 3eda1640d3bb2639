"""Shared vocabulary of the competition rules (formats, opening modes, result kinds)."""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Final


class Format(StrEnum):
    """The two shapes a tournament takes at its start (T-2)."""

    ROUND_ROBIN = "round_robin"
    SWISS = "swiss"


class AccountKind(StrEnum):
    """Who is asking (A-1); mirrors `AccountKind` in common.proto."""

    REGISTERED = "registered"
    GUEST = "guest"
    BOT = "bot"


class OpeningMode(StrEnum):
    """How the first moves of every game are chosen: the nine modes O-1..O-9."""

    FREE = "free"
    RANDOM_1 = "random_1"
    RANDOM_2 = "random_2"
    RANDOM_3 = "random_3"
    TABLE_UP_TO_1 = "table_up_to_1"
    TABLE_UP_TO_2 = "table_up_to_2"
    TABLE_UP_TO_3 = "table_up_to_3"
    TABLE_ALL = "table_all"
    THEMATIC = "thematic"

    @property
    def rule(self) -> str:
        """The SPEC rule number that defines this mode ("O-1".."O-9")."""
        return f"O-{_MODE_ORDER.index(self) + 1}"

    @property
    def random_moves(self) -> int:
        """Number of random legal plies played before the game (O-2..O-4); 0 otherwise."""
        return _RANDOM_MOVES.get(self, 0)

    def is_table_draw(self) -> bool:
        """Is this a draw from an official table (O-5..O-8)?"""
        return self in _TABLE_CEILING

    def uses_official_table(self) -> bool:
        """Does this mode need a variant with an official table (O-5..O-9)?"""
        return self.is_table_draw() or self is OpeningMode.THEMATIC

    @property
    def table_class_limit(self) -> int | None:
        """The class k of "up to class k" (O-5..O-7); None for every other mode (all 174 has no cap)."""
        return _TABLE_CEILING.get(self)


_MODE_ORDER: Final = tuple(OpeningMode)
_RANDOM_MOVES: Final = {OpeningMode.RANDOM_1: 1, OpeningMode.RANDOM_2: 2, OpeningMode.RANDOM_3: 3}
_TABLE_CEILING: Final[dict[OpeningMode, int | None]] = {
    OpeningMode.TABLE_UP_TO_1: 1,
    OpeningMode.TABLE_UP_TO_2: 2,
    OpeningMode.TABLE_UP_TO_3: 3,
    OpeningMode.TABLE_ALL: None,
}

# The level of an opening class: PARI is 0, then 1 < 2 < 3 < 4 whatever the side (O-5..O-8).
PARI_LEVEL: Final = 0
MAX_OPENING_LEVEL: Final = 4


class Side(Enum):
    """The colour of one side of a game."""

    WHITE = "white"
    BLACK = "black"

    @property
    def other(self) -> Side:
        """The opposite colour."""
        return Side.BLACK if self is Side.WHITE else Side.WHITE


class ResultKind(StrEnum):
    """How a round game ended, for scoring and rating (T-7, T-15..T-19, R-3)."""

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
