"""Move lists agree with pydraughts (slow but rule-complete) on positions from random games.

pydraughts and py-draughts both install a top-level `draughts` package into the
same directory; pydraughts' board lives at `draughts.core.variant.Board`. Its
russian/brazilian squares are numbered from White's side, so squares are
compared by algebraic name there. Duplicate capture routes are compared as sets.
"""

from __future__ import annotations

import random

# pydraughts and py-draughts both install into site-packages/draughts/; the submodules of
# pydraughts stay importable whichever __init__ wins.
import draughts.convert as convert
import draughts.core.variant as pydraughts
import pytest

from arbiter.draughts import Position
from arbiter.draughts.position import _NOTATIONS

# ours -> pydraughts variant name; positions per variant kept small (pydraughts ~1 ms a call)
VARIANTS = {"international": "standard", "english": "english", "italian": "italian", "russian": "russian",
            "brazilian": "brazilian"}
POSITIONS_PER_VARIANT = 150
ALGEBRAIC = {"russian", "brazilian"}


def _sample_positions(variant: str, count: int, seed: int) -> list[Position]:
    """Positions from random games, capture positions (where rules differ) favoured."""
    rng = random.Random(seed)
    out: list[Position] = []
    while len(out) < count:
        position = Position.initial(variant)
        for _ in range(300):
            moves = position.legal_moves()
            if not moves:
                break
            if rng.random() < (0.5 if moves[0].is_capture else 0.04):
                out.append(position)
            position = position.play(rng.choice(moves))
    return out[:count]


def _ours(position: Position) -> set[tuple]:
    notation = _NOTATIONS[position.variant]

    def name(square: int) -> object:
        return notation.square_name(square) if position.variant.value in ALGEBRAIC else square

    return {
        (name(m.from_square), name(m.to_square), frozenset(name(c) for c in m.captured))
        for m in position.legal_moves()
    }


def _theirs(position: Position) -> set[tuple]:
    variant = VARIANTS[position.variant.value]
    fen = position.to_fen()
    if position.variant.value in ALGEBRAIC:
        notation = _NOTATIONS[position.variant]
        parts = fen.split(":")
        for i in (1, 2):
            items = [i for i in parts[i][1:].split(",") if i]
            parts[i] = parts[i][0] + ",".join(
                ("K" if item.startswith("K") else "") + notation.square_name(int(item.lstrip("K"))) for item in items
            )
        fen = ":".join(parts)
    board = pydraughts.Board(variant, fen)
    out = set()
    for move in board.legal_moves():
        squares = list(move.steps_move)
        captured = list(move.captures or [])
        if position.variant.value in ALGEBRAIC:
            squares = convert._number_to_algebraic("-".join(map(str, squares)), variant=variant).split("-")
            captured = (
                convert._number_to_algebraic("-".join(map(str, captured)), variant=variant).split("-")
                if captured
                else []
            )
        out.add((squares[0], squares[-1], frozenset(captured)))
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_move_lists_match_pydraughts(variant: str) -> None:
    for position in _sample_positions(variant, POSITIONS_PER_VARIANT, seed=sorted(VARIANTS).index(variant)):
        assert _ours(position) == _theirs(position), position.to_fen()
