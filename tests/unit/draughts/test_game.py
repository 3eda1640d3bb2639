"""Game end: no legal move loses; each variant's draw rules (decisions and sources in docs/rules.md)."""

from __future__ import annotations

import copy
import random

import pytest

from arbiter.draughts import DrawRule, Game, GameOutcome, IllegalMoveError, Move, Position
from arbiter.vocabulary import GameResult, Side, Termination


def _quiet_moves(position: Position, seen: set[tuple[int, int, int, bool]], king: bool) -> list[Move]:
    """Moves of a king (or of a man, crowning not) that take nothing, repeat no position and allow no capture."""
    out = []
    for move in position.legal_moves():
        piece = position.piece_at(move.from_square)
        if move.is_capture or move.crowns or piece is None or piece.is_king != king:
            continue
        after = position.play(move)
        if after.key not in seen and not any(m.is_capture for m in after.legal_moves()):
            out.append(move)
    return out


def play_quiet_king_moves(game: Game, plies: int, man_plies: frozenset[int] = frozenset()) -> None:
    """Play `plies` quiet moves that repeat no position and allow no capture.

    They are king moves, except at the ply numbers in `man_plies` (counted from 0),
    which are man moves that do not crown. Moves are drawn at random (seeded), each
    leaving the next side a quiet reply; a dead end restarts from the game as given.
    """
    for seed in range(50):
        rng = random.Random(seed)
        trial = copy.deepcopy(game)
        seen = {p.key for p in game.positions}
        played: list[Move] = []
        for ply in range(plies):
            position = trial.position
            candidates = _quiet_moves(position, seen, king=ply not in man_plies)
            rng.shuffle(candidates)
            king_next = ply + 1 not in man_plies
            last = ply + 1 == plies
            replies = (
                m
                for m in candidates
                if last or _quiet_moves(position.play(m), seen | {position.play(m).key}, king_next)
            )
            move = next(replies, None)
            if move is None or trial.outcome() is not None:
                break
            seen.add(position.play(move).key)
            trial.play(move)
            played.append(move)
        else:
            for move in played:
                assert game.outcome() is None, game.outcome()
                game.play(move)
            return
    raise AssertionError(f"no line of {plies} quiet moves from {game.position.to_fen()}")


def shuffle(game: Game, white: tuple[str, str], black: tuple[str, str], times: int) -> None:
    """Move one king of each side back and forth."""
    for _ in range(times):
        game.play(white[0])
        game.play(black[0])
        game.play(white[1])
        game.play(black[1])


def test_no_legal_move_loses() -> None:
    game = Game("international", "W:W46:B37,41")
    assert game.outcome() == GameOutcome(Termination.NO_MOVES, Side.BLACK)
    assert game.outcome().result is GameResult.BLACK_WINS  # type: ignore[union-attr]
    assert game.legal_moves() == []
    with pytest.raises(IllegalMoveError, match="game is over"):
        game.play("46-41")


def test_losing_the_last_piece_loses() -> None:
    game = Game("english", "B:W14:B10")
    game.play("10x17")
    outcome = game.outcome()
    assert outcome is not None and outcome.winner is Side.BLACK and not outcome.is_draw


def test_threefold_repetition_is_a_draw() -> None:
    game = Game("english", "W:WK29,K30,24:BK1,K2,9")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    assert game.outcome() is None  # second occurrence
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    outcome = game.outcome()
    assert outcome == GameOutcome(Termination.DRAW_RULE, None, DrawRule.REPETITION)
    assert outcome.result.pdn == "1/2-1/2" and outcome.is_draw


def test_a_man_move_clears_the_repetition_count() -> None:
    game = Game("english", "W:WK29,K30,24:BK1,K2,9")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    game.play("24-20")
    game.play("9-13")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    assert game.outcome() is None


def draws_after(game: Game, plies: int, man_plies: frozenset[int] = frozenset()) -> GameOutcome | None:
    """Play `plies` quiet moves (see play_quiet_king_moves), checking the game is on before the last."""
    play_quiet_king_moves(game, plies - 1, man_plies)
    assert game.outcome() is None
    play_quiet_king_moves(game, 1, frozenset({0}) if plies - 1 in man_plies else frozenset())
    return game.outcome()


NO_PROGRESS = GameOutcome(Termination.DRAW_RULE, None, DrawRule.NO_PROGRESS)
ENDGAME = GameOutcome(Termination.DRAW_RULE, None, DrawRule.ENDGAME_RULE)


@pytest.mark.parametrize(
    ("variant", "fen", "plies", "man_plies", "outcome"),
    [
        # FMJD 6.2: 25 moves each of kings only
        ("international", "W:WK47,K48,46,45:BK3,K4,5,6", 50, (), NO_PROGRESS),
        # FMJD: three pieces with a king against a lone king, 16 moves each; two pieces, 5 each
        ("international", "W:WK47,K49,K36:BK3", 32, (), ENDGAME),
        ("international", "W:WK47,K49:BK3", 10, (), ENDGAME),
        # FMJD-64 7.2.5: 15 moves each of kings only; 7.2.8: two kings against one, 5 each
        ("russian", "W:WK29,K31,21:BK4,K2,12", 30, (), NO_PROGRESS),
        ("russian", "W:WK29,K32:BK1", 10, (), ENDGAME),
        ("brazilian", "W:WK29,K32:BK1", 10, (), ENDGAME),
        # FMJD-64 7.2.6 beside a lone king off the main road (no 7.2.4: a man; no 7.2.7): 30
        # moves each without capture or crowning; the man's moves keep 7.2.5 from firing first.
        ("russian", "W:WK30,K31,21:BK12", 60, (0, 28, 56), ENDGAME),
        ("brazilian", "W:WK30,K31,21:BK12", 60, (0, 28, 56), ENDGAME),
        # WCDF and FID art. 10.4: 40 moves each without a man moving or a capture
        ("english", "B:WK29,K30:BK1,K2", 80, (), NO_PROGRESS),
        ("italian", "W:WK29,K30:BK1,K2", 80, (), NO_PROGRESS),
        # APCA: three kings against a lone king 13 moves each; 30 moves each of kings only
        ("pool", "W:WK29,K30,K31:BK12", 26, (), ENDGAME),
        ("pool", "B:WK29,K30:BK1,K2", 60, (), NO_PROGRESS),
    ],
)
def test_a_count_draws_on_its_last_ply(
    variant: str, fen: str, plies: int, man_plies: tuple[int, ...], outcome: GameOutcome
) -> None:
    assert draws_after(Game(variant, fen), plies, frozenset(man_plies)) == outcome


def test_the_endgame_count_starts_when_the_material_arises() -> None:
    # White takes the black man: only then does the 5-move count start.
    game = Game("international", "W:WK47,K36:BK3,38")
    game.play("47x24")
    assert draws_after(game, 10) == ENDGAME


def test_russian_7_2_6_restarts_on_a_crowning() -> None:
    game = Game("russian", "W:WK30,21,6:BK12")
    play_quiet_king_moves(game, 20, man_plies=frozenset({0}))
    game.play(next(m for m in game.legal_moves() if m.crowns))  # new balance: the count starts again
    assert draws_after(game, 60, man_plies=frozenset({27, 55})) == ENDGAME


def test_italian_draws_at_the_fourth_repetition() -> None:
    game = Game("italian", "W:WK29,K31:BK1,K3")
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 2)
    assert game.outcome() is None  # third occurrence: play on (FID capo I art. 9.3 b1)
    shuffle(game, ("29-25", "25-29"), ("1-5", "5-1"), 1)
    assert game.outcome() == GameOutcome(Termination.DRAW_RULE, None, DrawRule.REPETITION)


def test_spanish_draws_by_repetition_and_has_no_move_count() -> None:
    game = Game("spanish", "W:WK1,K2:BK31,K32")
    play_quiet_king_moves(game, 150)
    assert game.outcome() is None
    game = Game("spanish", "W:WK4:BK29")
    shuffle(game, ("4-8", "8-4"), ("29-25", "25-29"), 1)
    assert game.outcome() is None
    shuffle(game, ("4-8", "8-4"), ("29-25", "25-29"), 1)
    assert game.outcome() == GameOutcome(Termination.DRAW_RULE, None, DrawRule.REPETITION)


def test_game_records_moves_and_positions() -> None:
    game = Game("english")
    move = game.play("11-15")
    assert isinstance(move, Move) and move.notation == "11-15"
    assert game.moves == (move,)
    assert game.positions[0] == Position.initial("english")
    assert game.position.turn is Side.WHITE
    assert Game.from_position(game.position).position == game.position
    assert "english" in repr(game)
