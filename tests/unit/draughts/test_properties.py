"""Property tests: random games of every variant stay legal and end by a rule.

Checked after every move: the two sides never share a square and stay on the
board; no side ever has more pieces than at the start, nor gains any; no man
stands on its crowning row; the move took exactly the pieces it names, all of
the opponent's; every listed move is distinct and its notation parses back to it.

Every game, from the initial position or from a random endgame, is played with
random legal moves until the game itself reports its end; there is no move cap.
The rules' own limits bound it instead, and are asserted at every ply:

- a move that takes a piece or moves a man cannot be undone, and a game has only
  so many: at most one capture fewer than the pieces on the board, and at most
  (rows - 1) steps a man, plus two rows back for every piece a man jumps;
- between two such moves the kings' moves run for at most the variant's
  no-progress count, or where it has none (spanish) for at most (n - 1) times the
  number of ways to place its kings, n being the repetitions that draw.

A draw must then be the rule it names: a repetition has the position n times
since the last irreversible move, a no-progress draw stops exactly at its count.
"""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from arbiter.draughts import DrawRule, FenError, Game, GameOutcome, Piece, Position, Variant
from arbiter.draughts.game import DRAW_RULES
from arbiter.draughts.position import _NOTATIONS
from arbiter.vocabulary import Side, Termination


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
    mover, other = before.turn, before.turn.other
    assert after.turn is other
    assert after.count(mover) == before.count(mover)
    assert after.count(other) == before.count(other) - len(move.captured)
    assert len(set(move.captured)) == len(move.captured)
    for square in move.captured:
        piece = before.piece_at(square)
        assert piece is not None and piece.side is other
        assert after.piece_at(square) is None or square == move.to_square
    moved = after.piece_at(move.to_square)
    assert moved is not None and moved.side is mover
    assert moved.is_king == (before.piece_at(move.from_square).is_king or move.crowns)  # type: ignore[union-attr]


def _irreversible_bound(position: Position) -> int:
    """How many captures and man moves a game from `position` can hold at most."""
    size = _NOTATIONS[position.variant].geometry.size
    pieces = position.count(Side.WHITE) + position.count(Side.BLACK)
    men = position.count(Side.WHITE, kings=False) + position.count(Side.BLACK, kings=False)
    return (pieces - 1) + men * (size - 1) + 2 * pieces


def _stretch_bound(position: Position) -> int:
    """How many king moves without capture can follow one another in `position`'s material."""
    rules = DRAW_RULES[position.variant]
    if rules.quiet_plies is not None:
        return rules.quiet_plies
    squares = len(_NOTATIONS[position.variant].square_bit) - 1
    men = position.count(Side.WHITE, kings=False) + position.count(Side.BLACK, kings=False)
    white_kings, black_kings = position.count(Side.WHITE, kings=True), position.count(Side.BLACK, kings=True)
    free = squares - men
    placements = math.comb(free, white_kings) * math.comb(free - white_kings, black_kings) * 2
    return (rules.repetitions - 1) * placements


def play_to_the_end(game: Game, rng: random.Random, check_legality: bool) -> GameOutcome:
    """Random legal moves until the game ends, asserting the rules' bounds at every ply."""
    irreversible_left = _irreversible_bound(game.position)
    stretch = 0
    since_irreversible = [game.position.key]
    while (outcome := game.outcome()) is None:
        before = game.position
        moves = before.legal_moves()
        if check_legality:
            assert len(set(moves)) == len(moves)
            for move in moves:
                assert before.parse_move(move.notation) == move
                assert before.parse_move(move.long_notation) == move
        index = rng.randrange(len(moves))
        move = moves[index]
        game.play(move)
        if check_legality:
            _check_move(before, index, game.position)
            _check_position(game.position)
        if move.is_capture or not before.piece_at(move.from_square).is_king:  # type: ignore[union-attr]
            irreversible_left -= 1
            assert irreversible_left >= 0, f"more captures and man moves than {game.variant} allows"
            stretch = 0
            since_irreversible = []
        else:
            stretch += 1
            assert stretch <= _stretch_bound(game.position), f"{game.variant}: {stretch} king moves in a row"
        since_irreversible.append(game.position.key)
    position = game.position
    if outcome.winner is not None:
        assert outcome.termination is Termination.NO_MOVES
        assert not position.legal_moves() and outcome.winner is position.turn.other
    elif outcome.draw_rule is DrawRule.REPETITION:
        assert since_irreversible.count(position.key) == DRAW_RULES[game.variant].repetitions
    elif outcome.draw_rule is DrawRule.NO_PROGRESS:
        assert stretch == DRAW_RULES[game.variant].quiet_plies
    else:
        assert outcome.draw_rule is DrawRule.ENDGAME_RULE
    return outcome


@given(variant=st.sampled_from(list(Variant)), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_games_end_and_stay_legal(variant: Variant, seed: int) -> None:
    game = Game(variant)
    _check_position(game.position)
    play_to_the_end(game, random.Random(seed), check_legality=True)


@st.composite
def endgames(draw: st.DrawFn) -> Game:
    """A game from a random position of one to four pieces a side, men or kings."""
    variant = draw(st.sampled_from(list(Variant)))
    squares = len(_NOTATIONS[variant].square_bit) - 1
    white_n, black_n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    pieces = white_n + black_n
    chosen = draw(st.lists(st.integers(1, squares), min_size=pieces, max_size=pieces, unique=True))
    kings = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))

    def item(square: int, side: str, king: bool) -> str:
        if not king:
            try:
                Position.from_fen(variant, f"W:{side}{square}")
            except FenError:  # a man on its own crowning row would already be a king
                king = True
        return f"K{square}" if king else str(square)

    white = ",".join(item(s, "W", k) for s, k in zip(chosen[:white_n], kings[:white_n], strict=True))
    black = ",".join(item(s, "B", k) for s, k in zip(chosen[white_n:], kings[white_n:], strict=True))
    turn = draw(st.sampled_from("WB"))
    return Game(variant, f"{turn}:W{white}:B{black}")


@given(game=endgames(), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_endgames_end_by_a_rule(game: Game, seed: int) -> None:
    play_to_the_end(game, random.Random(seed), check_legality=False)


def test_one_seeded_game_per_variant_ends() -> None:
    # One seeded game per variant, so that each variant is exercised on every run.
    seen: dict[Variant, str] = {}
    for variant in Variant:
        outcome = play_to_the_end(Game(variant), random.Random(variant.value), check_legality=False)
        seen[variant] = outcome.termination.value
    assert set(seen) == set(Variant)


def test_pieces_are_reported_consistently() -> None:
    position = Position.from_fen("international", "W:W31,K46:B5,K10")
    assert position.pieces == {31: Piece.WHITE_MAN, 46: Piece.WHITE_KING, 5: Piece.BLACK_MAN, 10: Piece.BLACK_KING}
    assert position.count(Side.BLACK, kings=False) == 1
