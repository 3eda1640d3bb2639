"""Perft against published tables, for every variant.

Sources and their duplicate conventions ("merged" = a capture taking the same
pieces by two routes counts once, as our engine does; "kept" = every route counts):

- [BIK-CHK] Aart Bik, "perft for 8x8 checkers", talkchess.com t=27814 (2009) and
  aartbik.com/MISC/checkers.html: english initial position, duplicates KEPT
  (they first differ from merged at depth 12).
- [BIK-INT] Aart Bik, "BikDam: international checkers" (aartbik.blogspot.com):
  international initial position, duplicates MERGED.
- [DCTL] Rein Halbersma's dctl test suite, test/src/algo/traversal/initial/board_08x08.cpp
  and board_10x10.cpp (github.com/rhalbersma/dctl), which lists BOTH conventions per
  variant, citing the shashki.com "Standard validation generator moves" thread
  (brazilian, pool, russian, checkers) and the FMJD forum thread "Perft for all
  recognized draughts variants" (damforum.nl t=2822: italian, spanish).
- [FMJD-PERFT] FMJD forum "Perft" thread (damforum.nl t=2308), positions Random178,
  Woldouby, AllKings, AlmostPromotion, duplicates MERGED (dctl .../international/fmjd.cpp).
- [SHASHKI] shashki.com thread, "FrontRows" position, duplicates KEPT
  (dctl .../international/shashki.cpp); no capture there has two routes at these depths.
- [GILBERT] Ed Gilbert's italian positions (FMJD forum t=2822; dctl
  .../italian/gilbert.cpp), duplicates KEPT, in FID square numbering.

"Kept" counts every route of a capture once per order in which it takes the
pieces (`perft(..., every_route=True)`, `arbiter perft --routes`): a flying king
that goes straight on to its next piece takes one route, whichever empty square
behind the last piece it passes. Kept tables reproduced here:

- [SHASHKI] FrontRows "W:B16,17,18,19,20:W31,32,33,34,35" (shashki.com
  "Standard validation generator moves" thread, PNphpBB2-viewtopic-t-627-start-58;
  dctl test/src/algo/traversal/international/shashki.cpp): 310,315 / 1,008,317 /
  3,174,159 / 10,369,533 at depths 8 / 9 / 10 / 11 (the merged counts are
  310,315 / 1,008,313 / 3,174,155 / 10,369,511).
- [DCTL-KEPT] initial positions, "keep_duplicates" rows of dctl
  test/src/algo/traversal/initial/board_08x08.cpp and board_10x10.cpp (citing the
  shashki.com thread above, start-57, -78 and -126): russian 929,905 (d8) and
  4,570,667 (d9); brazilian 907,836 and 4,431,847; pool 929,902 and 4,570,615;
  international 6,483,971 (d8).

Depths here run in about a second each; the deeper ones are `slow`-marked tests
(`pytest -m slow tests/unit/draughts/test_perft.py`) and in tests/bench/bench_perft.py.
"""

from __future__ import annotations

import pytest

from arbiter.draughts import IllegalMoveError, Position, perft

INITIAL = {
    # [BIK-INT] / [DCTL] merged: ... 6'483'961 (kept: 6'483'971) at depth 8
    "international": [9, 81, 658, 4_265, 27_117, 167_140],
    # [BIK-CHK] kept = [DCTL] merged up to depth 11
    "english": [7, 49, 302, 1_469, 7_361, 36_768, 179_740],
    # [DCTL] merged (kept identical to depth 11)
    "italian": [7, 49, 302, 1_469, 7_361, 36_473, 177_532],
    # [DCTL] merged (kept: 929'905 at depth 8)
    "russian": [7, 49, 302, 1_469, 7_482, 37_986, 190_146],
    # [DCTL] merged (kept: 907'836 at depth 8)
    "brazilian": [7, 49, 302, 1_469, 7_473, 37_628, 187_302],
    # [DCTL] merged (kept: 929'902 at depth 8)
    "pool": [7, 49, 302, 1_469, 7_482, 37_986, 190_146],
    # [DCTL] merged (kept identical to depth 11)
    "spanish": [7, 49, 302, 1_469, 7_361, 36_473, 177_532],
}


@pytest.mark.parametrize("variant", sorted(INITIAL))
def test_initial_position(variant: str) -> None:
    position = Position.initial(variant)
    assert [perft(position, depth) for depth in range(1, len(INITIAL[variant]) + 1)] == INITIAL[variant]


def test_depth_zero_is_one_node() -> None:
    assert perft(Position.initial("english"), 0) == 1


def test_negative_depth_is_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        perft(Position.initial("english"), -1)


POSITIONS = [
    # [FMJD-PERFT] merged
    ("international", "B:BK17,K24:W6,9,10,11,20,21,22,23,30,K31,33,37,41,42,43,44,46", [14, 55, 1_168, 5_432, 87_195]),
    (
        "international",
        "W:B12,13,14,16,18,19,21,23,24,26:W25,27,28,30,32,33,34,35,37,38",
        [6, 12, 30, 73, 215, 590, 1_944, 6_269, 22_369, 88_050],
    ),
    (
        "international",
        "W:WK31,K32,K33,K34,K35,K36,K37,K38,K39,K40,K41,K42,K43,K44,K45,K46,K47,K48,K49,K50"
        ":BK1,K2,K3,K4,K5,K6,K7,K8,K9,K10,K11,K12,K13,K14,K15,K16,K17,K18,K19,K20",
        [17, 79, 352, 1_399, 7_062],
    ),
    ("international", "W:W6,7,8,9,10:B41,42,43,44,45", [9, 81, 795, 7_578, 86_351]),
    # [SHASHKI] kept (equal to merged here)
    ("international", "W:B16,17,18,19,20:W31,32,33,34,35", [9, 81, 534, 2_538, 9_052, 29_999, 98_971]),
    # [GILBERT] kept (merged first differs at depth 10: 164'173 vs 164'177)
    ("italian", "W:W30,26,27,22,23,24,17,18,20:B14,15,16,9,11,5,6,1,3", [5, 13, 42, 107, 360, 1_099, 3_736, 12_495]),
    ("italian", "B:W30,21,22,17,20,K6:B25,28,9,5,1,3", [6, 47, 271, 1_916, 10_810, 73_137]),
    ("italian", "W:WK27,K28,17,20,9,K12,8:B21,24,K19,K13,14,K11,4", [13, 112, 828, 6_756, 46_241]),
]


@pytest.mark.parametrize(("variant", "fen", "leaves"), POSITIONS, ids=lambda x: str(x)[:24])
def test_published_positions(variant: str, fen: str, leaves: list[int]) -> None:
    position = Position.from_fen(variant, fen)
    assert [perft(position, depth) for depth in range(1, len(leaves) + 1)] == leaves


def test_both_conventions_on_gilbert_1() -> None:
    # [GILBERT] publishes 164'177 with duplicates kept; the merged count is 4 lower.
    position = Position.from_fen("italian", "W:W30,26,27,22,23,24,17,18,20:B14,15,16,9,11,5,6,1,3")
    assert perft(position, 10, every_route=True) == 164_177
    assert perft(position, 10) == 164_173


def test_kept_duplicates_where_a_king_circles() -> None:
    # Two routes around the same four pieces, in opposite orders: one move merged, two kept.
    position = Position.from_fen("italian", "W:WK13:B10,19,8,4,18,2,11")
    assert perft(position, 1) == 1
    assert perft(position, 1, every_route=True) == 2


def test_a_king_going_straight_on_takes_one_route_per_stop() -> None:
    # 46 takes 37, then 19 further along the same line, stopping on 14, 10 or 5: three moves
    # and three routes, not one route per empty square passed between the two pieces.
    position = Position.from_fen("international", "W:WK46:B37,19")
    assert perft(position, 1) == 3
    assert perft(position, 1, every_route=True) == 3
    assert [m.long_notation for m in position.legal_moves()] == ["46x32x5", "46x32x10", "46x32x14"]


def test_a_king_turning_behind_a_piece_takes_one_route_per_turn() -> None:
    # After 37 the king may turn on 32 (to take 27) or on 28 (to take 22): two orders, two moves.
    position = Position.from_fen("international", "W:WK46:B37,27,22")
    assert perft(position, 1, every_route=True) == perft(position, 1) == len(position.legal_moves())
    assert {m.captured for m in position.legal_moves()} == {(37, 27), (37, 22)}


def test_passing_squares_are_not_other_routes_to_parse() -> None:
    position = Position.from_fen("international", "W:WK46:B37,19")
    assert position.parse_move("46x10") == position.parse_move("46x32x10")
    with pytest.raises(IllegalMoveError, match="not legal"):
        position.parse_move("46x28x10")


FRONT_ROWS = "W:B16,17,18,19,20:W31,32,33,34,35"


def test_front_rows_every_route() -> None:
    # [SHASHKI]: the first depth where the two conventions differ.
    position = Position.from_fen("international", FRONT_ROWS)
    assert perft(position, 9, every_route=True) == 1_008_317
    assert perft(position, 9) == 1_008_313


@pytest.mark.parametrize(("variant", "leaves"), [("russian", 929_905), ("brazilian", 907_836), ("pool", 929_902)])
def test_initial_every_route_depth_8(variant: str, leaves: int) -> None:
    # [DCTL-KEPT]
    assert perft(Position.initial(variant), 8, every_route=True) == leaves


@pytest.mark.slow
@pytest.mark.parametrize(("depth", "leaves"), [(10, 3_174_159), (11, 10_369_533)])
def test_front_rows_every_route_deep(depth: int, leaves: int) -> None:
    # [SHASHKI]
    assert perft(Position.from_fen("international", FRONT_ROWS), depth, every_route=True) == leaves


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "depth", "leaves"),
    [
        ("international", 8, 6_483_971),
        ("russian", 9, 4_570_667),
        ("brazilian", 9, 4_431_847),
        ("pool", 9, 4_570_615),
    ],
)
def test_initial_every_route_deep(variant: str, depth: int, leaves: int) -> None:
    # [DCTL-KEPT]
    assert perft(Position.initial(variant), depth, every_route=True) == leaves
