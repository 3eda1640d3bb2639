"""The supported draughts variants, their board and their capture rules.

Rule sources (cited where each rule is applied in `_movegen` and `game`):
- international: FMJD Official Rules of International Draughts.
- brazilian: the same FMJD rules on the 8x8 board; draw rules of the FMJD-64
  ("draughts-64") rules, arts. 7.2.3-7.2.8, as lidraughts applies them.
- russian: FMJD-64 / Russian Draughts Federation rules (capture, art. 7.2 draws).
- english: WCDF Rules of Draughts/Checkers (black moves first, short kings,
  free choice of capture, 40-move rule).
- italian: FID Regolamento Tecnico, capo I (men cannot take kings, four
  capture priorities, board with the dark corner on the player's right).
- pool: American Pool Checkers (flying kings, men take backwards, free choice).
- spanish: Spanish draughts (men take forward only, flying kings, most pieces
  then most kings), in Spanish notation: squares counted from White's side.
Draw rules and notation choices, with their sources: docs/rules.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from arbiter.draughts.errors import UnknownVariantError
from arbiter.vocabulary import Side


class Precedence(enum.StrEnum):
    """Which capture sequences are legal when several are available."""

    FREE = "free"  # any complete sequence (english, russian, pool)
    MAJORITY = "majority"  # most pieces, kings count as one (international, brazilian)
    ITALIAN = "italian"  # most pieces, then with a king, then most kings, then earliest king
    SPANISH = "spanish"  # most pieces, then most kings


class Numbering(enum.StrEnum):
    """How the dark squares are numbered 1..n on the diagram (White at the bottom)."""

    # Square 1 is the second square of the top row; the bottom-left corner is dark
    # (international, english, russian, brazilian, pool).
    STANDARD = "standard"
    # Square 1 is the top-left corner; the bottom-right corner is dark
    # (FID italian numbering, "Regolamento tecnico" art. 2.3-2.4).
    MIRRORED = "mirrored"
    # Square 1 is the bottom-right corner, White's; numbers run right to left, row
    # by row up the board, so White starts on 1-12: the FID numbering turned half
    # round (Portuguese federation's classic rules, art. 3; spanish). See docs/rules.md.
    SPANISH = "spanish"


@dataclass(frozen=True, slots=True)
class Rules:
    """Everything that tells one variant from another."""

    size: int
    first: Side
    numbering: Numbering
    men_capture_backward: bool
    men_capture_kings: bool
    flying_kings: bool
    crown_mid_capture: bool  # a man reaching the crown row mid-capture goes on as a king
    precedence: Precedence


class Variant(enum.StrEnum):
    """A supported variant; the value is its public name."""

    INTERNATIONAL = "international"
    ENGLISH = "english"
    ITALIAN = "italian"
    RUSSIAN = "russian"
    BRAZILIAN = "brazilian"
    POOL = "pool"
    SPANISH = "spanish"

    @property
    def rules(self) -> Rules:
        """The board and capture rules of this variant."""
        return _RULES[self]


_RULES: dict[Variant, Rules] = {
    Variant.INTERNATIONAL: Rules(
        size=10,
        first=Side.WHITE,
        numbering=Numbering.STANDARD,
        men_capture_backward=True,
        men_capture_kings=True,
        flying_kings=True,
        crown_mid_capture=False,  # FMJD: a man passing the crown row mid-capture stays a man
        precedence=Precedence.MAJORITY,
    ),
    Variant.BRAZILIAN: Rules(
        size=8,
        first=Side.WHITE,
        numbering=Numbering.STANDARD,
        men_capture_backward=True,
        men_capture_kings=True,
        flying_kings=True,
        crown_mid_capture=False,
        precedence=Precedence.MAJORITY,
    ),
    Variant.RUSSIAN: Rules(
        size=8,
        first=Side.WHITE,
        numbering=Numbering.STANDARD,
        men_capture_backward=True,
        men_capture_kings=True,
        flying_kings=True,
        crown_mid_capture=True,
        precedence=Precedence.FREE,
    ),
    Variant.ENGLISH: Rules(
        size=8,
        first=Side.BLACK,
        numbering=Numbering.STANDARD,
        men_capture_backward=False,
        men_capture_kings=True,
        flying_kings=False,
        crown_mid_capture=False,  # WCDF: reaching the king row ends the move
        precedence=Precedence.FREE,
    ),
    Variant.ITALIAN: Rules(
        size=8,
        first=Side.WHITE,
        numbering=Numbering.MIRRORED,
        men_capture_backward=False,
        men_capture_kings=False,
        flying_kings=False,
        crown_mid_capture=False,
        precedence=Precedence.ITALIAN,
    ),
    Variant.POOL: Rules(
        size=8,
        first=Side.BLACK,
        numbering=Numbering.STANDARD,
        men_capture_backward=True,
        men_capture_kings=True,
        flying_kings=True,
        crown_mid_capture=False,
        precedence=Precedence.FREE,
    ),
    Variant.SPANISH: Rules(
        size=8,
        first=Side.WHITE,
        numbering=Numbering.SPANISH,
        men_capture_backward=False,
        men_capture_kings=True,
        flying_kings=True,
        crown_mid_capture=False,
        precedence=Precedence.SPANISH,
    ),
}

_ALIASES: dict[str, Variant] = {
    "standard": Variant.INTERNATIONAL,
    "checkers": Variant.ENGLISH,
    "american": Variant.ENGLISH,
    "english_draughts": Variant.ENGLISH,
    "draughts64": Variant.RUSSIAN,
    "american_pool": Variant.POOL,
}


def variant_by_name(name: str | Variant) -> Variant:
    """The variant called `name` (case-insensitive; a few common aliases accepted)."""
    if isinstance(name, Variant):
        return name
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    try:
        return Variant(key)
    except ValueError:
        pass
    if key in _ALIASES:
        return _ALIASES[key]
    known = ", ".join(v.value for v in Variant)
    raise UnknownVariantError(f"unknown draughts variant {name!r}; known variants: {known}")
