"""Positions: FEN in and out, square numbering, move notation and parsing, errors."""

from __future__ import annotations

import dataclasses

import pytest

from arbiter.draughts import (
    AmbiguousMoveError,
    FenError,
    IllegalMoveError,
    Piece,
    Position,
    UnknownVariantError,
    Variant,
    variant_by_name,
)
from arbiter.vocabulary import Side


@pytest.mark.parametrize(
    ("variant", "fen"),
    [
        (
            "international",
            "W:W31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50"
            ":B1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20",
        ),
        ("english", "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"),
        ("italian", "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"),
        ("russian", "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"),
        ("brazilian", "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"),
        ("pool", "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"),
        ("spanish", "W:W1,2,3,4,5,6,7,8,9,10,11,12:B21,22,23,24,25,26,27,28,29,30,31,32"),
    ],
)
def test_initial_positions(variant: str, fen: str) -> None:
    assert Position.initial(variant).to_fen() == fen
    assert Position.from_fen(variant, fen) == Position.initial(variant)


def test_first_moves_use_each_variants_numbering() -> None:
    assert [m.notation for m in Position.initial("international").legal_moves()] == [
        "31-26", "31-27", "32-27", "32-28", "33-28", "33-29", "34-29", "34-30", "35-30",
    ]
    # english: black on 1-12 moves first
    assert [m.notation for m in Position.initial("english").legal_moves()] == [
        "9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16",
    ]
    # italian FID numbering: 21 is not on the edge, 24 is (dark corner on the right)
    assert [m.notation for m in Position.initial("italian").legal_moves()] == [
        "21-17", "21-18", "22-18", "22-19", "23-19", "23-20", "24-20",
    ]
    # russian: the same numbering as english, white moves first; c3-d4 is 22-18
    assert Position.initial("russian").parse_move("c3-d4").notation == "22-18"
    # spanish numbering counts from White's side, right to left: 9 is on the edge, 12 is not
    assert [m.notation for m in Position.initial("spanish").legal_moves()] == [
        "9-13", "10-13", "10-14", "11-14", "11-15", "12-15", "12-16",
    ]


def test_spanish_numbering_is_the_fid_one_turned_half_round() -> None:
    # Both boards have the dark corner on the player's right; Spanish square n is FID square 33 - n.
    assert Position.from_fen("spanish", "W:W1-12:B21-32") == Position.initial("spanish")
    for n in range(1, 33):
        spanish = Position.from_fen("spanish", f"W:WK{n}")
        italian = Position.from_fen("italian", f"W:WK{33 - n}")
        assert (spanish._white, spanish._kings) == (italian._white, italian._kings)


def test_fen_ranges_kings_and_spacing() -> None:
    position = Position.from_fen("international", ' "W:W31-35,K46:B1-3,K10." ')
    assert position.to_fen() == "W:W31,32,33,34,35,K46:B1,2,3,K10"
    assert position.piece_at(46) is Piece.WHITE_KING
    assert position.piece_at(10) is Piece.BLACK_KING
    assert position.piece_at(31) is Piece.WHITE_MAN
    assert position.piece_at(20) is None
    assert position.count(Side.WHITE) == 6 and position.count(Side.WHITE, kings=True) == 1
    assert position.pieces[3] is Piece.BLACK_MAN


def test_fen_accepts_lidraughts_fields_and_algebraic_squares() -> None:
    assert Position.from_fen("russian", "W:W21-32:B1-12:H0:F1") == Position.initial("russian")
    assert Position.from_fen("russian", "W:Wc3,Ke1:Bd6").to_fen() == "W:W22,K31:B10"


def test_black_to_move_and_empty_side() -> None:
    position = Position.from_fen("english", "B:W:BK1")
    assert position.turn is Side.BLACK
    assert position.to_fen() == "B:W:BK1"


@pytest.mark.parametrize(
    ("fen", "message"),
    [
        ("X:W31:B1", "side to move"),
        ("W:W51:B1", "not on the international board"),
        ("W:W31,31:B1", "given twice"),
        ("W:W31:B31", "given twice"),
        ("W:W3:B40", "crowning row"),
        ("W:W30:B47", "crowning row"),
        ("W:W30:Bz9", "not a square"),
        ("W:W40-31:B1", "backwards"),
        ("W:W20-50:B1", "more than the 20"),
        ("W:Q31:B1", "should start with W or B"),
    ],
)
def test_bad_fen(fen: str, message: str) -> None:
    with pytest.raises(FenError, match=message):
        Position.from_fen("international", fen)


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        Position.from_fen("international", "nonsense")
    with pytest.raises(ValueError):
        Position.initial("international").parse_move("1-2")


def test_variant_names() -> None:
    assert variant_by_name("International") is Variant.INTERNATIONAL
    assert variant_by_name("checkers") is Variant.ENGLISH
    assert variant_by_name(Variant.RUSSIAN) is Variant.RUSSIAN
    with pytest.raises(UnknownVariantError, match="known variants: international, english, italian"):
        variant_by_name("frysk")


def test_play_returns_a_new_position() -> None:
    start = Position.initial("international")
    after = start.play("32-28")
    assert start == Position.initial("international")
    assert after.turn is Side.BLACK
    assert after.piece_at(28) is Piece.WHITE_MAN and after.piece_at(32) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.turn = Side.BLACK  # type: ignore[misc]
    assert hash(start) == hash(Position.initial("international"))


def test_parse_move_forms() -> None:
    position = Position.from_fen("international", "W:WK46:B41,32,23")
    full = position.parse_move("46x37x28x19")
    assert full.notation == "46x19" and full.long_notation == "46x37x28x19"
    assert position.parse_move("46x19") == full
    assert position.parse_move("46-19") == full  # a '-' for a capture, as in old italian sources
    assert position.parse_move("46:19") == full
    assert position.parse_move("46x28x19") == full  # landing squares may be left out
    assert position.parse_move("46x19!") == full
    assert full.captured == (41, 32, 23) and full.is_capture


def test_zero_padded_and_quiet_moves() -> None:
    position = Position.initial("english")
    assert position.parse_move("09-13").notation == "9-13"
    assert not position.parse_move("9-13").is_capture


def test_ambiguous_short_capture_needs_the_route() -> None:
    # english king: two different captures both go 19 -> 17; free choice keeps both.
    position = Position.from_fen("english", "W:WK19:B8,7,20,16,14,15")
    notations = sorted(m.notation for m in position.legal_moves())
    assert notations == ["19x10x17", "19x12x3x10x17", "19x12x3x10x19"]
    with pytest.raises(AmbiguousMoveError, match="19x10x17"):
        position.parse_move("19x17")
    assert position.parse_move("19x10x17").captured == (15, 14)
    assert position.parse_move("19x12x17").captured == (16, 8, 7, 14)


def test_illegal_moves_are_refused_with_the_legal_ones() -> None:
    position = Position.initial("international")
    with pytest.raises(IllegalMoveError, match="legal moves: 31-26, 31-27"):
        position.parse_move("32-29")
    with pytest.raises(IllegalMoveError, match="not a move"):
        position.parse_move("32-27x")
    with pytest.raises(IllegalMoveError, match="not on the international board"):
        position.parse_move("60-55")
    foreign = Position.initial("international").play("32-28").legal_moves()[0]
    with pytest.raises(IllegalMoveError):
        position.play(foreign)


def test_moves_are_distinct_and_hashable() -> None:
    moves = Position.initial("international").legal_moves()
    assert len(set(moves)) == len(moves) == 9
    assert str(moves[0]) == "31-26"


def test_legal_moves_returns_a_fresh_list() -> None:
    position = Position.initial("italian")
    position.legal_moves().clear()
    assert len(position.legal_moves()) == 7


def test_repr_round_trips() -> None:
    position = Position.from_fen("brazilian", "B:WK29,21:B1,K2")
    assert eval(repr(position), {"Position": Position}) == position
