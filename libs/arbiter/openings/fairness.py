"""Whether an opening choice lets a tournament be rated (R-4, O-11)."""

from __future__ import annotations

from typing import NamedTuple

from arbiter.draughts.variants import Variant
from arbiter.openings.modes import OpeningMode
from arbiter.openings.tables import OFFICIAL_OPENINGS, Opening, OpeningError, eligible, load_table, variant_name
from arbiter.rating.rated import MAX_LEVEL_WITHOUT_HOME_AND_AWAY, competition_is_rated

__all__ = ["RatingCheck", "check_mode", "max_opening_level", "rating_allowed"]


class RatingCheck(NamedTuple):
    """The R-4 verdict on an opening choice, with the reason for people."""

    allowed: bool
    reason: str


def check_mode(variant: str | Variant, mode: OpeningMode, thematic_opening: int | None = None) -> None:
    """Raise OpeningError unless `mode` (and its thematic opening) can be played in `variant` (O-1..O-9)."""
    max_opening_level(variant, mode, thematic_opening)


def playable_modes() -> list[tuple[str, str]]:
    """Every (variant, opening mode) a round can be played in (O-1..O-9)."""
    playable = []
    for variant in Variant:
        for mode in OpeningMode:
            try:
                check_mode(variant, mode, 1 if mode is OpeningMode.THEMATIC else None)
            except OpeningError:
                continue
            playable.append((variant.value, mode.value))
    return playable


def max_opening_level(variant: str | Variant, mode: OpeningMode, thematic_opening: int | None = None) -> int | None:
    """The class level that counts for R-4: the table ceiling, the thematic opening's, or None (free, random)."""
    variant = variant_name(variant)
    mode = OpeningMode(mode)
    if mode is not OpeningMode.THEMATIC and thematic_opening is not None:
        raise OpeningError(f"only a thematic tournament chooses its opening; mode {mode} ({mode.rule}) draws it")
    if not mode.uses_official_table():
        return None
    table = load_table(variant)
    if mode is OpeningMode.THEMATIC:
        if thematic_opening is None:
            raise OpeningError(f"a thematic tournament needs the number of its opening, 1..{OFFICIAL_OPENINGS} (O-9)")
        return table.get(thematic_opening).level
    return max(opening.level for opening in eligible(table, mode))


def rating_allowed(
    variant: str | Variant, mode: OpeningMode, double: bool, thematic_opening: int | None = None
) -> RatingCheck:
    """R-4: may a tournament with this opening choice and home-and-away switch be rated, and why."""
    variant = variant_name(variant)
    mode = OpeningMode(mode)
    level = max_opening_level(variant, mode, thematic_opening)
    if level is None:
        return RatingCheck(True, f"{_words(mode)} never switch rating off (R-4)")
    reach = _reach(variant, mode, thematic_opening, level)
    if level <= MAX_LEVEL_WITHOUT_HOME_AND_AWAY:
        return RatingCheck(
            True,
            f"{reach}, and a single game is fair up to class {MAX_LEVEL_WITHOUT_HOME_AND_AWAY} (R-4)",
        )
    allowed = competition_is_rated(True, level, double)
    if allowed:
        return RatingCheck(
            True, f"{reach}; home and away plays each pairing with both colours, so it is fair (R-4, O-11)"
        )
    return RatingCheck(
        False,
        f"{reach}, and a single game is fair only up to class {MAX_LEVEL_WITHOUT_HOME_AND_AWAY}: "
        f"the tournament is friendly unless home and away is switched on (R-4, O-11)",
    )


def _reach(variant: str, mode: OpeningMode, thematic_opening: int | None, level: int) -> str:
    table = load_table(variant)
    if mode is OpeningMode.THEMATIC and thematic_opening is not None:
        opening = table.get(thematic_opening)
        return f"the thematic {variant} opening {opening.number} ({opening.moves_text}) is class {_label(opening)}"
    labels = "/".join(sorted({_label(o) for o in eligible(table, mode) if o.level == level}))
    return f"{_words(mode)} of the {variant} table reaches class {labels}"


def _label(opening: Opening) -> str:
    # english barred ballots are level 3 with no side; say why the label has no N/B.
    return f"{opening.class_label} (barred)" if opening.favours is None and not opening.is_pari else opening.class_label


def _words(mode: OpeningMode) -> str:
    if mode is OpeningMode.FREE:
        return "free openings"
    if mode.random_moves:
        return f"random {mode.random_moves}-move openings"
    if mode is OpeningMode.TABLE_ALL:
        return f"the draw from all {OFFICIAL_OPENINGS} openings"
    return f"the draw up to class {mode.table_class_limit}"
