"""The official tables as data: counts per class and per mode, and agreement with the source tables (O-5..O-9)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from arbiter.openings import (
    OFFICIAL_OPENINGS,
    OpeningError,
    eligible,
    get_opening,
    has_table,
    load_table,
)
from arbiter.openings.modes import OpeningMode
from arbiter.vocabulary import Side

# The federations' tables as published, kept as test data; the runtime never reads them.
SOURCES = Path(__file__).resolve().parents[2] / "data" / "openings"

TABLE_MODES = (
    OpeningMode.TABLE_UP_TO_1,
    OpeningMode.TABLE_UP_TO_2,
    OpeningMode.TABLE_UP_TO_3,
    OpeningMode.TABLE_ALL,
)

# O-5..O-8 (italian counts stated by the SPEC; english from the ACF bands: 80 PARI,
# 51 + 3 "best", 20 + 2 "strong", 18 barred).
MODE_COUNTS = {
    "italian": {"table_up_to_1": 83, "table_up_to_2": 126, "table_up_to_3": 166, "table_all": 174},
    "english": {"table_up_to_1": 134, "table_up_to_2": 156, "table_up_to_3": 174, "table_all": 174},
}
CLASS_COUNTS = {
    "italian": {"PARI": 26, "1B": 13, "1N": 44, "2B": 2, "2N": 41, "3B": 4, "3N": 36, "4N": 8},
    "english": {"PARI": 80, "1B": 51, "1N": 3, "2B": 20, "2N": 2, "3": 18},
}


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_class_counts(variant: str) -> None:
    table = load_table(variant)
    assert len(table.openings) == OFFICIAL_OPENINGS
    assert Counter(o.class_label for o in table.openings) == CLASS_COUNTS[variant]


@pytest.mark.parametrize("variant", ["italian", "english"])
@pytest.mark.parametrize("mode", TABLE_MODES)
def test_mode_counts(variant: str, mode: OpeningMode) -> None:
    pool = eligible(load_table(variant), mode)
    assert len(pool) == MODE_COUNTS[variant][mode.value]
    limit = mode.table_class_limit
    # "Up to class k" = PARI plus every level <= k, both colours (O-5..O-7).
    assert all(limit is None or o.level <= limit for o in pool)


def test_english_up_to_3_is_all() -> None:
    # O-8: the barred ballots are level 3, so up to 3 and all 174 are the same set.
    table = load_table("english")
    assert eligible(table, OpeningMode.TABLE_UP_TO_3) == eligible(table, OpeningMode.TABLE_ALL)


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_class_label_level_and_side_agree(variant: str) -> None:
    for o in load_table(variant).openings:
        if o.class_label == "PARI":
            assert (o.level, o.favours) == (0, None)
        elif o.class_label == "3":
            # english barred ballots: level 3, side unknown (O-8).
            assert (variant, o.level, o.favours) == ("english", 3, None)
        else:
            assert o.level == int(o.class_label[0])
            assert o.favours == {"B": Side.WHITE, "N": Side.BLACK}[o.class_label[1]]
        assert len(o.moves) == 3


@pytest.mark.parametrize("variant", ["italian", "english"])
def test_numbers_moves_and_positions_are_distinct(variant: str) -> None:
    table = load_table(variant)
    assert [o.number for o in table.openings] == list(range(1, 175))
    assert len({o.moves for o in table.openings}) == 174
    assert len({o.fen_after for o in table.openings}) == 174


def test_first_mover() -> None:
    # O-8: white first in italian (black to move after three plies), black first in english.
    assert all(o.fen_after.startswith("B:") for o in load_table("italian").openings)
    assert all(o.fen_after.startswith("W:") for o in load_table("english").openings)


def test_table_header_names_its_source() -> None:
    for variant in ("italian", "english"):
        table = load_table(variant)
        assert table.variant == variant
        assert table.source and table.title


def test_get_opening() -> None:
    opening = get_opening("italian", 129)
    assert opening.moves == ("23-19", "12-15", "19x12")
    assert opening.class_label == "2B"
    assert get_opening("english", 174).name == "Skunk"
    with pytest.raises(OpeningError, match="no opening 175"):
        get_opening("english", 175)
    with pytest.raises(OpeningError, match="no opening 0"):
        get_opening("italian", 0)


def test_aliases_reach_the_same_table() -> None:
    assert load_table("checkers") is load_table("english")
    assert has_table("Italian") and not has_table("international")


@pytest.mark.parametrize("variant", ["international", "russian", "brazilian", "pool", "spanish"])
def test_no_table_for_other_variants(variant: str) -> None:
    with pytest.raises(OpeningError, match=f"variant {variant} has no official opening table.*italian and english"):
        load_table(variant)


def test_unknown_variant() -> None:
    with pytest.raises(OpeningError, match="unknown draughts variant"):
        load_table("hexdame")


@pytest.mark.parametrize("mode", [OpeningMode.FREE, OpeningMode.RANDOM_2])
def test_non_table_modes_have_no_eligible_list(mode: OpeningMode) -> None:
    with pytest.raises(OpeningError, match="does not draw from the official table"):
        eligible(load_table("italian"), mode)


def test_thematic_may_choose_any_of_the_174() -> None:
    assert len(eligible(load_table("english"), OpeningMode.THEMATIC)) == 174


# --- the project data against the source tables (tests/data/openings) ---



def _fen_sets(fen: str) -> tuple[str, frozenset[int], frozenset[int]]:
    side, *parts = fen.split(":")
    pieces = {part[0]: frozenset(int(square) for square in part[1:].split(",")) for part in parts}
    return side, pieces["W"], pieces["B"]


def test_italian_matches_the_source_table() -> None:
    source = json.loads((SOURCES / "italian_fid.json").read_text("utf-8"))
    assert source["counts"]["cumulative"] == {"PARI+1": 83, "PARI..2": 126, "PARI..3": 166, "all": 174}
    favours = {"white_bianco": Side.WHITE, "black_nero": Side.BLACK, None: None}
    for raw, opening in zip(source["openings"], load_table("italian").openings, strict=True):
        assert opening.number == raw["number"]
        assert " ".join(opening.moves) == raw["moves"]
        assert (opening.class_label, opening.level) == (raw["fid_class"], raw["class_level"])
        assert opening.favours == favours[raw["class_favours"]]
        after = raw["position_after"]
        assert _fen_sets(opening.fen_after) == ("B", frozenset(after["white"]), frozenset(after["black"]))


def test_english_matches_the_source_table() -> None:
    source = json.loads((SOURCES / "english_3move.json").read_text("utf-8"))
    assert source["counts"]["pask_bands"] == {
        "power evenly divided": 80,
        "White is Strong": 20,
        "White is Best": 51,
        "Black is Strong": 2,
        "Black is Best": 3,
    }
    # O-8: Pask's bands -> our classes; barred ballots are level 3, side unknown.
    bands = {
        "power evenly divided": "PARI",
        "White is Best": "1B",
        "Black is Best": "1N",
        "White is Strong": "2B",
        "Black is Strong": "2N",
    }
    for raw, opening in zip(source["openings"], load_table("english").openings, strict=True):
        assert opening.number == raw["number"]
        assert " ".join(opening.moves) == raw["moves"]
        assert opening.name == raw["name"]
        expected = "3" if raw["deck"] == "barred" else bands[raw["balance"]["pask_band"]]
        assert opening.class_label == expected
        assert _fen_sets(opening.fen_after) == _fen_sets(raw["fen_after"])
