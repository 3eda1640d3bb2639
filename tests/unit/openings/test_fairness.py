"""R-4: whether the opening choice lets a tournament be rated, with and without home and away."""

from __future__ import annotations

import pytest

from arbiter.draughts.variants import Variant
from arbiter.openings import OpeningError, check_mode, has_table, max_opening_level, playable_modes, rating_allowed
from arbiter.openings.modes import OpeningMode as M

# (variant, mode, thematic opening) -> level that counts, rated single, rated home and away.
CASES = [
    ("international", M.FREE, None, None, True, True),
    ("russian", M.RANDOM_1, None, None, True, True),
    ("italian", M.RANDOM_3, None, None, True, True),
    ("italian", M.TABLE_UP_TO_1, None, 1, True, True),
    ("italian", M.TABLE_UP_TO_2, None, 2, True, True),
    ("italian", M.TABLE_UP_TO_3, None, 3, False, True),
    ("italian", M.TABLE_ALL, None, 4, False, True),
    ("english", M.TABLE_UP_TO_1, None, 1, True, True),
    ("english", M.TABLE_UP_TO_2, None, 2, True, True),
    # O-8: barred ballots are level 3.
    ("english", M.TABLE_UP_TO_3, None, 3, False, True),
    ("english", M.TABLE_ALL, None, 3, False, True),
    # Thematic: the chosen opening's class counts.
    ("italian", M.THEMATIC, 4, 0, True, True),  # PARI
    ("italian", M.THEMATIC, 1, 1, True, True),  # 1B
    ("italian", M.THEMATIC, 129, 2, True, True),  # 2B
    ("italian", M.THEMATIC, 3, 3, False, True),  # 3N
    ("italian", M.THEMATIC, 6, 4, False, True),  # 4N
    ("english", M.THEMATIC, 1, 0, True, True),  # PARI
    ("english", M.THEMATIC, 3, 3, False, True),  # barred
]


@pytest.mark.parametrize(("variant", "mode", "number", "level", "single", "double"), CASES)
def test_r4_table(
    variant: str, mode: M, number: int | None, level: int | None, single: bool, double: bool
) -> None:
    assert max_opening_level(variant, mode, number) == level
    assert rating_allowed(variant, mode, False, number).allowed is single
    assert rating_allowed(variant, mode, True, number).allowed is double


def test_reasons_are_for_people() -> None:
    allowed, reason = rating_allowed("italian", M.TABLE_ALL, False)
    assert not allowed
    assert "class 4N" in reason and "home and away" in reason and "R-4" in reason
    allowed, reason = rating_allowed("italian", M.TABLE_UP_TO_3, True)
    assert allowed and "3B/3N" in reason and "O-11" in reason
    allowed, reason = rating_allowed("english", M.TABLE_ALL, False)
    assert not allowed and "3 (barred)" in reason
    allowed, reason = rating_allowed("italian", M.THEMATIC, False, 6)
    assert not allowed and "opening 6 (21-17 10-14 17-13) is class 4N" in reason
    allowed, reason = rating_allowed("pool", M.RANDOM_2, False)
    assert allowed and "never switch rating off" in reason
    allowed, reason = rating_allowed("english", M.TABLE_UP_TO_2, False)
    assert allowed and "class 2B/2N" in reason


def test_table_modes_refused_outside_italian_and_english() -> None:
    for mode in (M.TABLE_UP_TO_1, M.TABLE_ALL, M.THEMATIC):
        with pytest.raises(OpeningError, match="russian has no official opening table"):
            rating_allowed("russian", mode, False, 1 if mode is M.THEMATIC else None)


def test_thematic_needs_a_valid_number() -> None:
    with pytest.raises(OpeningError, match="needs the number of its opening"):
        check_mode("italian", M.THEMATIC)
    with pytest.raises(OpeningError, match="no opening 200"):
        check_mode("english", M.THEMATIC, 200)
    with pytest.raises(OpeningError, match="only a thematic tournament chooses"):
        check_mode("english", M.TABLE_UP_TO_1, 12)


def test_mode_values_accepted() -> None:
    # The service may hand over the enum's string value.
    assert rating_allowed("italian", "table_all", True).allowed  # type: ignore[arg-type]


def test_the_table_modes_are_playable_where_a_variant_has_a_table_and_the_others_everywhere() -> None:
    """O-1..O-9: free and random openings in every variant; table and thematic ones only with an official table."""
    listed = set(playable_modes())
    expected = {(variant.value, mode.value) for variant in Variant for mode in M
                if not mode.uses_official_table() or has_table(variant.value)}
    assert listed == expected
