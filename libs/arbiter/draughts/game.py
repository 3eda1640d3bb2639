"""A game: moves played from a start position, with game-end and draw rules.

Draws are automatic here (the server adjudicates; nobody has to claim):

- every variant: the same position with the same side to move for the third
  time (FMJD rules, FMJD-64 art. 7.2.3, WCDF, FID);
- international (FMJD rules, draw section): 25 moves each of kings only,
  without capture; a lone king against three pieces including a king, 16 moves
  each; a lone king against two pieces or fewer including a king, 5 moves each;
- russian and brazilian (FMJD-64 art. 7.2 as quoted in lidraughts' Russian
  variant, which applies them to brazilian too): 15 moves each of kings only, without capture (7.2.5); three or more
  kings against a lone king, 15 moves each (7.2.4); both sides with kings and
  no change of material, 30 moves each with 4-5 pieces, 60 with 6-7 (7.2.6);
  three pieces including a king against a lone king holding the long diagonal,
  5 moves each (7.2.7); two pieces or fewer including a king against a lone
  king, 5 moves each (7.2.8);
- english: 40 moves each without a man advancing and without a capture (WCDF
  rules of draughts, draw rule);
- italian: 40 moves each without a man moving and without a capture (FID;
  stated here from secondary summaries of the Regolamento, not its text);
- pool and spanish: repetition only (no further rule stated here).

A move counter restarts when its material configuration changes (a capture,
or a crowning where the configuration counts kings).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from arbiter.draughts.errors import IllegalMoveError
from arbiter.draughts.position import _NOTATIONS, Move, Position
from arbiter.draughts.variants import Color, Variant, variant_by_name


class Termination(enum.StrEnum):
    """Why a game ended."""

    NO_LEGAL_MOVES = "no_legal_moves"  # the side to move is blocked or has no pieces: it loses
    THREEFOLD_REPETITION = "threefold_repetition"
    NO_PROGRESS = "no_progress"  # the kings-only / no-man-move move limit
    ENDGAME_RULE = "endgame_rule"  # a move limit for a given material configuration


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a game ended: the winner (None for a draw) and the reason."""

    termination: Termination
    winner: Color | None

    @property
    def is_draw(self) -> bool:
        """Whether the game is drawn."""
        return self.winner is None

    def result(self) -> str:
        """The PDN result tag: "1-0" (white won), "0-1" or "1/2-1/2"."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner is Color.WHITE else "0-1"


# Plies of king-only moves without capture after which the game is drawn.
_NO_PROGRESS_PLIES: dict[Variant, int] = {
    Variant.INTERNATIONAL: 50,  # FMJD: 25 moves each
    Variant.RUSSIAN: 30,  # FMJD-64 art. 7.2.5: 15 moves each
    Variant.BRAZILIAN: 30,
    Variant.ENGLISH: 80,  # WCDF: 40 moves each without a man advancing or a capture
    Variant.ITALIAN: 80,  # FID: 40 moves each without a man moving or a capture
}


class Game:
    """A game in progress: its positions, its moves and its outcome."""

    def __init__(self, variant: Variant | str = Variant.INTERNATIONAL, fen: str | None = None) -> None:
        v = variant_by_name(variant)
        start = Position.from_fen(v, fen) if fen is not None else Position.initial(v)
        self._positions: list[Position] = [start]
        self._moves: list[Move] = []
        self._quiet_plies = 0
        self._repetitions: dict[tuple[int, int, int, bool], int] = {start.key: 1}
        self._endgame = _endgame_rule(start)
        self._endgame_plies = 0

    @classmethod
    def from_position(cls, position: Position) -> Game:
        """A game starting from `position`."""
        return cls(position.variant, position.to_fen())

    @property
    def variant(self) -> Variant:
        """The variant played."""
        return self._positions[0].variant

    @property
    def position(self) -> Position:
        """The current position."""
        return self._positions[-1]

    @property
    def positions(self) -> tuple[Position, ...]:
        """Every position of the game, the start first."""
        return tuple(self._positions)

    @property
    def moves(self) -> tuple[Move, ...]:
        """Every move played, in order."""
        return tuple(self._moves)

    def legal_moves(self) -> list[Move]:
        """The legal moves now (empty once the game is over)."""
        if self.outcome() is not None:
            return []
        return self.position.legal_moves()

    def play(self, move: Move | str) -> Move:
        """Play `move` (a `Move` or its text) and return it as a `Move`."""
        outcome = self.outcome()
        if outcome is not None:
            raise IllegalMoveError(f"the game is over ({outcome.termination.value}, {outcome.result()})")
        before = self.position
        if isinstance(move, str):
            move = before.parse_move(move)
        after = before.play(move)
        man_moved = not (before._kings & move._raw[0])
        if move.is_capture or man_moved:
            # Captures and man moves cannot be undone: no earlier position can recur.
            self._quiet_plies = 0
            self._repetitions = {}
        else:
            self._quiet_plies += 1
        self._repetitions[after.key] = self._repetitions.get(after.key, 0) + 1
        rule = _endgame_rule(after)
        if rule is not None and self._endgame is not None and rule[0] == self._endgame[0]:
            self._endgame_plies += 1
        else:
            self._endgame_plies = 0
        self._endgame = rule
        self._positions.append(after)
        self._moves.append(move)
        return move

    def outcome(self) -> Outcome | None:
        """The outcome if the game has ended, else None."""
        pos = self.position
        if not pos.legal_moves():
            return Outcome(Termination.NO_LEGAL_MOVES, pos.turn.opponent)
        if self._repetitions.get(pos.key, 0) >= 3:
            return Outcome(Termination.THREEFOLD_REPETITION, None)
        limit = _NO_PROGRESS_PLIES.get(self.variant)
        if limit is not None and self._quiet_plies >= limit:
            return Outcome(Termination.NO_PROGRESS, None)
        if self._endgame is not None and self._endgame_plies >= self._endgame[1]:
            return Outcome(Termination.ENDGAME_RULE, None)
        return None

    def is_over(self) -> bool:
        """Whether the game has ended."""
        return self.outcome() is not None

    def __repr__(self) -> str:
        return f"Game({self.variant.value!r}, {len(self._moves)} moves, fen={self.position.to_fen()!r})"


def _long_diagonal(position: Position) -> int:
    """The main road a1-h8 of the 8x8 board as a bit mask."""
    geo = _NOTATIONS[position.variant].geometry
    mask = 0
    for row in range(geo.size):
        index = geo.index_of(row, geo.size - 1 - row)
        if index is not None:
            mask |= geo.bit[index]
    return mask


def _endgame_rule(position: Position) -> tuple[object, int] | None:
    """(configuration tag, ply limit) of the material-based draw rule in force, if any."""
    v = position.variant
    if v not in (Variant.INTERNATIONAL, Variant.RUSSIAN, Variant.BRAZILIAN):
        return None
    w, b, k = position._white, position._black, position._kings
    wk, bk = (w & k).bit_count(), (b & k).bit_count()
    wn, bn = w.bit_count(), b.bit_count()
    lone = None
    if wn == 1 and wk == 1 and bk >= 1:
        lone, strong_n, strong_k = w, bn, bk
    elif bn == 1 and bk == 1 and wk >= 1:
        lone, strong_n, strong_k = b, wn, wk
    if v is Variant.INTERNATIONAL:
        if lone is None:
            return None
        if strong_n <= 2:
            return ("fmjd-6.5", 10)
        if strong_n == 3:
            return ("fmjd-6.4", 32)
        return None
    if lone is not None:
        if strong_n <= 2:
            return ("fmjd64-7.2.8", 10)
        if strong_n == 3 and lone & _long_diagonal(position):
            return ("fmjd64-7.2.7", 10)
        if strong_k == strong_n:
            return (("fmjd64-7.2.4", strong_n), 30)
        return None
    if wk >= 1 and bk >= 1:
        total = wn + bn
        material = (wn, bn, wk, bk)
        if total in (4, 5):
            return (("fmjd64-7.2.6", material), 60)
        if total in (6, 7):
            return (("fmjd64-7.2.6", material), 120)
    return None
