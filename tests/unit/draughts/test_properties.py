"""Property tests: random games of every variant, played to the end, stay legal.

Checked after every move: the two sides never share a square and stay on the
board; no side ever has more pieces than at the start, nor gains any; no man
stands on its crowning row; the move took exactly the pieces it names, all of
the opponent's; every listed move is distinct and its notation parses back to it.
"""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from arbiter.draughts import Color, Game, Piece, Position, Variant
from arbiter.draughts.position import _NOTATIONS

MAX_PLIES = 3000  # a safety net only: the draw rules end every game long before


def _check_position(position: Position) -> None:
    geo = _NOTATIONS[position.variant].geometry
    white, black, kings = position._white, position._black, position._kings
    assert not white & black
    assert (white | black) & ~geo.board == 0
    assert kings & ~(white | black) == 0
    limit = 20 if geo.size == 10 else 12
    assert white.bit_count() <= limit and black.bit_count() <= limit
    assert (white & ~kings) & geo.rows[0] == 0, "white man on its crowning row"
    assert (black & ~kings) & geo.rows[-1] == 0, "black man on its crowning row"
    assert Position.from_fen(position.variant, position.to_fen()) == position


def _check_move(before: Position, move_index: int, after: Position) -> None:
    move = before.legal_moves()[move_index]
    mover, other = before.turn, before.turn.opponent
    assert after.turn is other
    assert after.count(mover) == before.count(mover)
    assert after.count(other) == before.count(other) - len(move.captured)
    assert len(set(move.captured)) == len(move.captured)
    for square in move.captured:
        piece = before.piece_at(square)
        assert piece is not None and piece.color is other
        assert after.piece_at(square) is None or square == move.to_square
    moved = after.piece_at(move.to_square)
    assert moved is not None and moved.color is mover
    assert moved.is_king == (before.piece_at(move.from_square).is_king or move.crowns)  # type: ignore[union-attr]


@given(variant=st.sampled_from(list(Variant)), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_games_end_and_stay_legal(variant: Variant, seed: int) -> None:
    rng = random.Random(seed)
    game = Game(variant)
    _check_position(game.position)
    for _ in range(MAX_PLIES):
        if game.outcome() is not None:
            break
        before = game.position
        moves = before.legal_moves()
        assert len(set(moves)) == len(moves)
        for move in moves:
            assert before.parse_move(move.notation) == move
            assert before.parse_move(move.long_notation) == move
        index = rng.randrange(len(moves))
        game.play(moves[index])
        _check_move(before, index, game.position)
        _check_position(game.position)
    outcome = game.outcome()
    assert outcome is not None, f"{variant} game still running after {MAX_PLIES} plies"
    if outcome.winner is not None:
        assert not game.position.legal_moves()
        assert outcome.winner is game.position.turn.opponent


def test_one_seeded_game_per_variant_ends() -> None:
    # One seeded game per variant, so that each variant is exercised on every run.
    seen: dict[Variant, str] = {}
    for variant in Variant:
        rng = random.Random(variant.value)
        game = Game(variant)
        while game.outcome() is None and len(game.moves) < MAX_PLIES:
            game.play(rng.choice(game.position.legal_moves()))
        outcome = game.outcome()
        assert outcome is not None
        seen[variant] = outcome.termination.value
    assert set(seen) == set(Variant)


def test_pieces_are_reported_consistently() -> None:
    position = Position.from_fen("international", "W:W31,K46:B5,K10")
    assert position.pieces == {31: Piece.WHITE_MAN, 46: Piece.WHITE_KING, 5: Piece.BLACK_MAN, 10: Piece.BLACK_KING}
    assert position.count(Color.BLACK, kings=False) == 1
