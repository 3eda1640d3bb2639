"""The official three-move tables as data: italian (FID) and english (ACF) (O-5..O-9).

The tables live in `data/<variant>.json` next to this module, each with a header naming
its source; they are read once and cached. Nothing here plays moves (only variant names
come from the rules engine): the unit tests replay every opening with the engine to prove
the stored moves and positions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

from arbiter.draughts.variants import Variant, variant_by_name
from arbiter.openings.modes import MAX_OPENING_LEVEL, PARI_LEVEL, OpeningMode
from arbiter.vocabulary import Side

__all__ = [
    "OFFICIAL_OPENINGS",
    "TABLE_VARIANTS",
    "Opening",
    "OpeningError",
    "OpeningTable",
    "eligible",
    "get_opening",
    "has_table",
    "load_table",
    "variant_name",
]

# O-5..O-9: the only variants with an official three-move table.
TABLE_VARIANTS: Final = ("english", "italian")
# O-8, O-9: both tables hold 174 openings, numbered 1..174.
OFFICIAL_OPENINGS: Final = 174


class OpeningError(ValueError):
    """An opening request that cannot be met; the message is written for people."""


@dataclass(frozen=True, slots=True)
class Opening:
    """One official three-move opening: its moves, class and the position it reaches."""

    variant: str
    number: int
    # Move strings in the engine's notation ("22-18", "18x9"), first mover first.
    moves: tuple[str, ...]
    # PARI, 1N/1B .. 4N (italian, FID); PARI, 1N/1B, 2N/2B, 3 (english, see the data header).
    class_label: str
    # PARI = 0, then 1..4 whatever the side (O-5).
    level: int
    # The side the class favours; None for PARI and for english barred ballots (side unknown).
    favours: Side | None
    # PDN FEN of the position after the moves, as the engine writes it.
    fen_after: str
    name: str | None = None
    # Where the class comes from, for people (ACF rank and score, a corroboration).
    note: str | None = None

    @property
    def is_pari(self) -> bool:
        """Is this opening even (class PARI)?"""
        return self.level == PARI_LEVEL

    @property
    def moves_text(self) -> str:
        """The moves as one string, e.g. "21-17 9-13 25-21"."""
        return " ".join(self.moves)


@dataclass(frozen=True, slots=True)
class OpeningTable:
    """One variant's official table of 174 openings, in number order."""

    variant: str
    title: str
    source: str
    openings: tuple[Opening, ...]

    def get(self, number: int) -> Opening:
        """The opening with this official number (1..174)."""
        if not 1 <= number <= len(self.openings):
            raise OpeningError(
                f"{self.variant} has openings 1..{len(self.openings)}; there is no opening {number} (O-9)"
            )
        return self.openings[number - 1]

    def up_to(self, level: int) -> tuple[Opening, ...]:
        """PARI plus every opening of level <= `level`, both colours (O-5..O-7)."""
        return tuple(opening for opening in self.openings if opening.level <= level)

    @property
    def max_level(self) -> int:
        """The highest class level in the table (italian 4, english 3)."""
        return max(opening.level for opening in self.openings)


def variant_name(variant: str | Variant) -> str:
    """The engine's public name of `variant` ("checkers" -> "english"); OpeningError if unknown."""
    try:
        return variant_by_name(variant).value
    except ValueError as error:
        raise OpeningError(str(error)) from None


def has_table(variant: str | Variant) -> bool:
    """Does this variant have an official opening table (O-5..O-9)?"""
    return variant_name(variant) in TABLE_VARIANTS


def load_table(variant: str | Variant) -> OpeningTable:
    """The official table of `variant` (italian or english), read once from the package data."""
    name = variant_name(variant)
    if name not in TABLE_VARIANTS:
        raise OpeningError(
            f"variant {name} has no official opening table; table modes are for "
            f"{' and '.join(sorted(TABLE_VARIANTS, reverse=True))} (O-5..O-9)"
        )
    return _load(name)


@cache
def _load(variant: str) -> OpeningTable:
    raw = json.loads(resources.files(__package__).joinpath("data", f"{variant}.json").read_text("utf-8"))
    header = raw["header"]
    openings = tuple(_opening(variant, item) for item in raw["openings"])
    if [opening.number for opening in openings] != list(range(1, OFFICIAL_OPENINGS + 1)):
        raise OpeningError(f"the {variant} table data must list openings 1..{OFFICIAL_OPENINGS} in order")
    return OpeningTable(variant=variant, title=header["title"], source=header["source"], openings=openings)


def _opening(variant: str, item: Mapping[str, Any]) -> Opening:
    level = int(item["level"])
    if not PARI_LEVEL <= level <= MAX_OPENING_LEVEL:
        raise OpeningError(f"{variant} opening {item['number']}: level {level} is outside 0..4")
    favours = item["favours"]
    return Opening(
        variant=variant,
        number=int(item["number"]),
        moves=tuple(item["moves"]),
        class_label=item["class"],
        level=level,
        favours=None if favours is None else Side(favours),
        fen_after=item["fen_after"],
        name=item.get("name"),
        note=item.get("note"),
    )


def get_opening(variant: str | Variant, number: int) -> Opening:
    """The official opening `number` (1..174) of `variant`, e.g. for a thematic tournament (O-9)."""
    return load_table(variant).get(number)


def eligible(table: OpeningTable, mode: OpeningMode) -> tuple[Opening, ...]:
    """The openings a table-draw mode may draw: PARI plus every level <= k, or all 174 (O-5..O-8)."""
    if mode is OpeningMode.THEMATIC:
        # O-9: the creator may choose any of the 174.
        return table.openings
    if not mode.is_table_draw():
        raise OpeningError(f"mode {mode} ({mode.rule}) does not draw from the official table")
    limit = mode.table_class_limit
    return table.openings if limit is None else table.up_to(limit)
