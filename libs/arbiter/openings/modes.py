"""The opening vocabulary: the nine modes O-1..O-9 and the class levels of the official tables (O-5..O-8).

Pure and stdlib-only. The competition rules (creation, R-4) and the openings service read these
words from here: the openings package owns them, so it depends on no competition module.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


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
