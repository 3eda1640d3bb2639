"""One case per capture rule that tells the variants apart (rule sources in arbiter.draughts.variants)."""

from __future__ import annotations

from arbiter.draughts import Position
from arbiter.vocabulary import Side


def moves(variant: str, fen: str) -> list[tuple[str, tuple[int, ...], bool]]:
    """(long notation, captured squares, crowns) of every legal move."""
    return [(m.long_notation, m.captured, m.crowns) for m in Position.from_fen(variant, fen).legal_moves()]


def test_captures_are_compulsory_in_every_variant() -> None:
    for variant, fen in [
        ("international", "W:W32,31:B27"),
        ("brazilian", "W:W22,21:B18"),
        ("russian", "W:W22,21:B18"),
        ("pool", "B:W22,21:B18"),
        ("english", "B:W22,21:B18"),
        ("italian", "W:W21,24:B18"),
        ("spanish", "W:W12,9:B15"),  # spanish numbering: white on 1-12
    ]:
        assert all(m.is_capture for m in Position.from_fen(variant, fen).legal_moves()), variant


def test_majority_capture_international() -> None:
    # 32x21x12 takes two pieces, 33x24 one: only the longer capture is legal (FMJD majority rule).
    assert moves("international", "W:W32,33:B27,17,29") == [("32x21x12", (27, 17), False)]


def test_free_choice_russian_majority_brazilian() -> None:
    # Same idea on 8x8: the one-piece capture stays legal where choice is free.
    assert moves("russian", "W:W21,23:B17,10,19") == [("21x14x7", (17, 10), False), ("23x16", (19,), False)]
    assert moves("brazilian", "W:W21,23:B17,10,19") == [("21x14x7", (17, 10), False)]


def test_english_men_capture_forward_only_and_kings_step() -> None:
    # A black man below a white man cannot take it backwards.
    assert moves("english", "B:W14:B18") == [("18-22", (), False), ("18-23", (), False)]
    # A king jumps one square only: no flying capture from afar.
    assert moves("english", "W:WK29:B18") == [("29-25", (), False)]


def test_russian_men_capture_backwards() -> None:
    assert moves("russian", "W:W14:B18") == [("14x23", (18,), False)]


def test_russian_man_crowned_mid_capture_goes_on_as_king() -> None:
    # 9x2 crowns on d8, then the new king flies over 11 (FMJD-64 art. 4.7).
    assert moves("russian", "W:W9:B6,11") == [("9x2x16", (6, 11), True), ("9x2x20", (6, 11), True)]
    # Brazilian (international rules): the man stops on the crown row as a new king.
    assert moves("brazilian", "W:W9:B6,11") == [("9x2", (6,), True)]


def test_man_passing_the_crown_row_stays_a_man_in_brazilian() -> None:
    # 10x3 reaches the last row, then must take 8 backwards and ends uncrowned on 12.
    assert moves("brazilian", "W:W10:B7,8") == [("10x3x12", (7, 8), False)]
    assert moves("russian", "W:W10:B7,8") == [("10x3x12", (7, 8), True)]


def test_english_crowning_ends_the_move() -> None:
    assert moves("english", "W:W10:B7,8") == [("10x3", (7,), True)]


def test_flying_king_lands_anywhere_behind_and_must_continue() -> None:
    assert [m for m, _, _ in moves("international", "W:WK46:B41,32,23")] == [
        "46x37x28x5",
        "46x37x28x10",
        "46x37x28x14",
        "46x37x28x19",
    ]


def test_captured_pieces_block_until_the_move_ends() -> None:
    # Turkish strike: the king may not jump 41 twice nor pass over it again.
    for move in Position.from_fen("international", "W:WK46:B41,23,19,28").legal_moves():
        assert len(set(move.captured)) == len(move.captured)


def test_italian_men_cannot_take_kings() -> None:
    assert moves("italian", "W:W22:BK18") == [("22-19", (), False)]


def test_italian_capture_with_the_king_first() -> None:
    # Both the man on 22 and the king on 28 can take one piece: the king must (FID priority 2).
    assert moves("italian", "W:W22,K28:B18,23") == [("28x19", (23,), False)]


def test_italian_capture_the_most_kings() -> None:
    assert moves("italian", "W:WK19:BK14,15") == [("19x10", (14,), False)]


def test_italian_capture_the_king_met_first() -> None:
    # Two lines take a king and a man each; the one meeting the king first is compulsory.
    assert moves("italian", "W:WK19:BK14,5,15,K7") == [("19x10x1", (14, 5), False)]


def test_italian_most_pieces_beats_kings() -> None:
    # Two men (19x10x1 style) beat one king.
    assert [m for m, _, _ in moves("italian", "W:WK19:B14,5,K15")] == ["19x10x1"]


def test_two_routes_to_the_same_capture_are_one_move() -> None:
    # The king can circle 18, 11, 10, 19... either way round: one move (FMJD convention).
    position = Position.from_fen("italian", "W:WK13:B10,19,8,4,18,2,11")
    (move,) = position.legal_moves()
    assert len(position._routes()[move._raw]) == 2
    assert move.from_square == move.to_square == 13


def test_a_capture_can_end_on_its_own_origin() -> None:
    position = Position.from_fen("english", "W:WK19:B8,7,20,16,14,15")
    loop = [m for m in position.legal_moves() if m.to_square == 19]
    assert len(loop) == 1 and len(loop[0].captured) == 4
    after = position.play(loop[0])
    assert after.piece_at(19) is not None and after.count(Side.BLACK) == 2


def test_no_legal_move_when_blocked() -> None:
    assert Position.from_fen("international", "W:W46:B37,41").legal_moves() == []
    assert Position.from_fen("international", "W:W:B1").is_game_over()
