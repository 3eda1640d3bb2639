"""A game: moves played from a start position, with game-end and draw rules.

Draws are automatic here (the server adjudicates; nobody has to claim). Each
variant's rules, the reading taken where a text is unclear and the source of
each are in docs/rules.md ("Draughts variants: draw rules and notation"):

- repetition: the same position with the same side to move for the third time,
  the fourth in italian (FID Regolamento tecnico, capo I, art. 9.3 b1);
- no progress: plies of king moves without a capture and without a man moving:
  international 25 moves each (FMJD 6.2), russian and brazilian 15 each
  (FMJD-64 7.2.5), english and italian 40 each (WCDF; FID art. 10.4), pool 30
  each (APCA rule 26); spanish has none;
- endgame counts, which run side by side, each from the ply its material
  configuration arose: international, a lone king against three pieces with a
  king 16 moves each, against two pieces or one 5 each (FMJD art. 6);
  russian and brazilian, FMJD-64 7.2.4 (three kings or more against a lone
  king, 15 moves each), 7.2.6 (both sides with a king and no capture nor
  crowning: 30 moves each with 4-5 pieces, 60 with 6-7), 7.2.7 (three pieces
  with a king against a lone king on the main road, 5 each) and 7.2.8 (two
  pieces with a king against a lone king, 5 each); pool, three kings against a
  lone king, 13 moves each (APCA playing rules).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from arbiter.draughts.errors import IllegalMoveError
from arbiter.draughts.position import _NOTATIONS, Move, Position
from arbiter.draughts.variants import Variant, variant_by_name
from arbiter.vocabulary import GameResult, Side, Termination


class DrawRule(enum.StrEnum):
    """Which of a variant's draw rules ended a game (the contracts report each as Termination.DRAW_RULE)."""

    REPETITION = "repetition"  # the same position, same side to move, for the variant's n-th time
    NO_PROGRESS = "no_progress"  # the kings-only / no-man-move move limit
    ENDGAME_RULE = "endgame_rule"  # a move limit for a given material configuration


@dataclass(frozen=True, slots=True)
class GameOutcome:
    """How the rules ended a game: NO_MOVES with the winner, or DRAW_RULE with the rule that drew it."""

    termination: Termination
    winner: Side | None
    draw_rule: DrawRule | None = None

    @property
    def is_draw(self) -> bool:
        """Whether the game is drawn."""
        return self.winner is None

    @property
    def result(self) -> GameResult:
        """The game's result (its PDN tag is `result.pdn`)."""
        return GameResult.won_by(self.winner)


@dataclass(frozen=True, slots=True)
class DrawRules:
    """The draw rules of a variant that do not depend on material (see docs/rules.md)."""

    repetitions: int  # how many times the same position (same side to move) recurs to draw
    quiet_plies: int | None  # plies of king moves without capture or man move that draw; None: no such rule


DRAW_RULES: dict[Variant, DrawRules] = {
    Variant.INTERNATIONAL: DrawRules(3, 50),  # FMJD 6.1; 6.2: 25 moves each
    Variant.RUSSIAN: DrawRules(3, 30),  # FMJD-64 7.2.3; 7.2.5: 15 moves each
    Variant.BRAZILIAN: DrawRules(3, 30),
    Variant.ENGLISH: DrawRules(3, 80),  # WCDF: 40 moves each without a man advancing or a capture
    Variant.ITALIAN: DrawRules(4, 80),  # FID capo I art. 9.3 b1 (fourth time); art. 10.4: 40 moves each
    Variant.POOL: DrawRules(3, 60),  # APCA rule 26, read as 30 moves each
    Variant.SPANISH: DrawRules(3, None),  # FPD classic rules art. 14 b; its move limits could not be read
}


class Game:
    """A game in progress: its positions, its moves and its outcome."""

    def __init__(self, variant: Variant | str = Variant.INTERNATIONAL, fen: str | None = None) -> None:
        v = variant_by_name(variant)
        start = Position.from_fen(v, fen) if fen is not None else Position.initial(v)
        self._positions: list[Position] = [start]
        self._moves: list[Move] = []
        self._rules = DRAW_RULES[v]
        self._quiet_plies = 0
        self._repetitions: dict[tuple[int, int, int, bool], int] = {start.key: 1}
        # Every endgame count in force: its limit, and the plies played since its material arose.
        self._endgame_limits: dict[object, int] = dict(_endgame_rules(start))
        self._endgame_plies: dict[object, int] = dict.fromkeys(self._endgame_limits, 0)

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
            reason = outcome.draw_rule or outcome.termination
            raise IllegalMoveError(f"the game is over ({reason}, {outcome.result.pdn})")
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
        # A count goes on while its configuration stays; one that newly applies starts from zero.
        self._endgame_limits = dict(_endgame_rules(after))
        self._endgame_plies = {tag: self._endgame_plies.get(tag, -1) + 1 for tag in self._endgame_limits}
        self._positions.append(after)
        self._moves.append(move)
        return move

    def outcome(self) -> GameOutcome | None:
        """The outcome if the game has ended, else None."""
        pos = self.position
        if not pos.legal_moves():
            return GameOutcome(Termination.NO_MOVES, pos.turn.other)
        if self._repetitions.get(pos.key, 0) >= self._rules.repetitions:
            return GameOutcome(Termination.DRAW_RULE, None, DrawRule.REPETITION)
        limit = self._rules.quiet_plies
        if limit is not None and self._quiet_plies >= limit:
            return GameOutcome(Termination.DRAW_RULE, None, DrawRule.NO_PROGRESS)
        if any(plies >= self._endgame_limits[tag] for tag, plies in self._endgame_plies.items()):
            return GameOutcome(Termination.DRAW_RULE, None, DrawRule.ENDGAME_RULE)
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


def _endgame_rules(position: Position) -> list[tuple[object, int]]:
    """(configuration tag, ply limit) of every material-based draw count in force."""
    v = position.variant
    if v not in (Variant.INTERNATIONAL, Variant.RUSSIAN, Variant.BRAZILIAN, Variant.POOL):
        return []
    w, b, k = position._white, position._black, position._kings
    wk, bk = (w & k).bit_count(), (b & k).bit_count()
    wn, bn = w.bit_count(), b.bit_count()
    lone = None
    if wn == 1 and wk == 1 and bk >= 1:
        lone, strong_n, strong_k = w, bn, bk
    elif bn == 1 and bk == 1 and wk >= 1:
        lone, strong_n, strong_k = b, wn, wk
    if v is Variant.POOL:
        # APCA playing rules: three kings against a lone king, 13 moves each.
        return [("apca-three-kings", 26)] if lone is not None and strong_n == strong_k == 3 else []
    if v is Variant.INTERNATIONAL:
        if lone is None:
            return []
        if strong_n <= 2:
            return [("fmjd-king-against-two", 10)]
        if strong_n == 3:
            return [("fmjd-king-against-three", 32)]
        return []
    rules: list[tuple[object, int]] = []
    if lone is not None:
        if strong_n <= 2:
            rules.append(("fmjd64-7.2.8", 10))
        elif strong_n == 3 and lone & _long_diagonal(position):
            rules.append(("fmjd64-7.2.7", 10))
        if strong_n >= 3 and strong_k == strong_n:
            rules.append((("fmjd64-7.2.4", strong_n), 30))
    if wk >= 1 and bk >= 1:
        # 7.2.6 also holds beside a lone king: the other counts do not replace it.
        material = (wn, bn, wk, bk)
        if wn + bn in (4, 5):
            rules.append((("fmjd64-7.2.6", material), 60))
        elif wn + bn in (6, 7):
            rules.append((("fmjd64-7.2.6", material), 120))
    return rules
