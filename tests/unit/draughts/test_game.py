"""Game end: no legal move loses; each variant's draw rules (sources in arbiter.draughts.game)."""

from __future__ import annotations

import random

import pytest

from arbiter.draughts import Color, Game, IllegalMoveError, Move, Outcome, Position, Termination


def play_quiet_king_moves(game: Game, plies: int) -> None:
    """Play `plies` non-capturing king moves that repeat no position and allow no capture.

    Moves are drawn at random (seeded) and a dead end restarts from the game as given.
    """
    for seed in range(50):
        rng = random.Random(seed)
        trial = Game.from_position(game.position)
        trial._endgame_plies, trial._quiet_plies = game._endgame_plies, game._quiet_plies
        trial._endgame = game._endgame
        seen = {p.key for p in game.positions}
        played: list[Move] = []
        for _ in range(plies):
            position = trial.position
            candidates = []
            for move in position.legal_moves():
                piece = position.piece_at(move.from_square)
                if move.is_capture or piece is None or not piece.is_king:
                    continue
                after = position.play(move)
                if after.key not in seen and not any(m.is_capture for m in after.legal_moves()):
                    candidates.append(move)
            if not candidates or trial.outcome() is not None:
                break
            move = rng.choice(candidates)
            seen.add(position.play(move).key)
            trial.play(move)
            played.append(move)
        else:
            for move in played:
                assert game.outcome() is None, game.outcome()
                game.play(move)
            return
    raise AssertionError(f"no line of {plies} quiet king moves from {game.position.to_fen()}")


def shuffle(game: Game, white: tuple[str, str], black: tuple[str, str], times: int) -> None:
    """Move one king of each side back and forth."""
    for _ in range(times):
        game.play(white[0])
        game.play(black[0])
        game.play(white[1])
        game.play(black[1])


def test_no_legal_move_loses() -> None:
    game = Game("international", "W:W46:B37,41")
    assert game.outcome() == Outcome(Termination.NO_LEGAL_MOVES, Color.BLACK)
    assert game.outcome().result() == "0-1"  # type: ignore[union-attr]
    assert game.legal_moves() == []
    with pytest.raises(IllegalMoveError, match="game is over"):
        game.play("46-41")


def test_losing_the_last_piece_loses() -> None:
    game = Game("english", "B:W14:B10")
    game.play("10x17")
    outcome = game.outcome()
    assert outcome is not None and outcome.winner is Color.BLACK and not outcome.is_draw


def test_threefold_repetition_is_a_draw() -> None:
    game = Game("english", "W:WK29,K30,24:BK1,K2,9")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    assert game.outcome() is None  # second occurrence
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    outcome = game.outcome()
    assert outcome == Outcome(Termination.THREEFOLD_REPETITION, None)
    assert outcome.result() == "1/2-1/2" and outcome.is_draw


def test_a_man_move_clears_the_repetition_count() -> None:
    game = Game("english", "W:WK29,K30,24:BK1,K2,9")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    game.play("24-20")
    game.play("9-13")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    assert game.outcome() is None


def test_international_25_king_moves_each() -> None:
    game = Game("international", "W:WK47,K48,46,45:BK3,K4,5,6")
    play_quiet_king_moves(game, 49)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.NO_PROGRESS, None)


def test_international_16_moves_with_three_pieces_against_a_king() -> None:
    game = Game("international", "W:WK47,K49,K36:BK3")
    play_quiet_king_moves(game, 31)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.ENDGAME_RULE, None)


def test_international_5_moves_with_two_pieces_against_a_king() -> None:
    game = Game("international", "W:WK47,K49:BK3")
    play_quiet_king_moves(game, 9)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.ENDGAME_RULE, None)


def test_the_endgame_count_starts_when_the_material_arises() -> None:
    # White takes the black man: only then does the 5-move count start.
    game = Game("international", "W:WK47,K36:BK3,38")
    game.play("47x24")
    play_quiet_king_moves(game, 9)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.ENDGAME_RULE, None)


def test_russian_15_king_moves_each() -> None:
    game = Game("russian", "W:WK29,K31,21:BK4,K2,12")
    play_quiet_king_moves(game, 29)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.NO_PROGRESS, None)


def test_russian_two_kings_against_one_5_moves() -> None:
    game = Game("russian", "W:WK29,K32:BK1")
    play_quiet_king_moves(game, 9)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.ENDGAME_RULE, None)


def test_brazilian_uses_the_draughts64_rules() -> None:
    game = Game("brazilian", "W:WK29,K32:BK1")
    play_quiet_king_moves(game, 10)
    assert game.outcome() == Outcome(Termination.ENDGAME_RULE, None)


def test_english_40_moves_each_without_man_move_or_capture() -> None:
    game = Game("english", "B:WK29,K30:BK1,K2")
    play_quiet_king_moves(game, 79)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1)
    assert game.outcome() == Outcome(Termination.NO_PROGRESS, None)


def test_italian_40_moves_each_without_man_move_or_capture() -> None:
    game = Game("italian", "W:WK29,K30:BK1,K2")
    play_quiet_king_moves(game, 80)
    assert game.outcome() == Outcome(Termination.NO_PROGRESS, None)


def test_game_records_moves_and_positions() -> None:
    game = Game("english")
    move = game.play("11-15")
    assert isinstance(move, Move) and move.notation == "11-15"
    assert game.moves == (move,)
    assert game.positions[0] == Position.initial("english")
    assert game.position.turn is Color.WHITE
    assert Game.from_position(game.position).position == game.position
    assert "english" in repr(game)
