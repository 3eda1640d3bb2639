"""The draughts rules engine: legal moves, move application, game end, perft.

Pure standard-library code. Variants: international, english, italian,
russian, brazilian, pool, spanish (see `arbiter.draughts.variants`).

    >>> from arbiter.draughts import Position
    >>> pos = Position.initial("international")
    >>> len(pos.legal_moves())
    9
    >>> pos.play("32-28").to_fen()[:2]
    'B:'
"""

from arbiter.draughts.errors import (
    AmbiguousMoveError,
    DraughtsError,
    FenError,
    IllegalMoveError,
    UnknownVariantError,
)
from arbiter.draughts.game import DrawRule, Game, GameOutcome
from arbiter.draughts.position import Move, Piece, Position, Square, perft
from arbiter.draughts.variants import Precedence, Rules, Variant, variant_by_name

__all__ = [
    "AmbiguousMoveError",
    "DraughtsError",
    "DrawRule",
    "FenError",
    "Game",
    "GameOutcome",
    "IllegalMoveError",
    "Move",
    "Piece",
    "Position",
    "Precedence",
    "Rules",
    "Square",
    "UnknownVariantError",
    "Variant",
    "perft",
    "variant_by_name",
]
