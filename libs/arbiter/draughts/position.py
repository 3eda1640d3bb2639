"""Positions, moves, FEN and move notation."""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field

from arbiter.draughts._board import Notation, build_notation
from arbiter.draughts._movegen import Engine, RawMove, apply, build_engine
from arbiter.draughts.errors import AmbiguousMoveError, FenError, IllegalMoveError
from arbiter.draughts.variants import Numbering, Variant, variant_by_name
from arbiter.vocabulary import Side

Square = int  # a square number in the variant's standard numbering (1-based)

_ENGINES: dict[Variant, Engine] = {v: build_engine(v.rules) for v in Variant}
_NOTATIONS: dict[Variant, Notation] = {v: build_notation(v.rules.size, v.rules.numbering) for v in Variant}


class Piece(enum.StrEnum):
    """A piece on a square."""

    WHITE_MAN = "w"
    WHITE_KING = "W"
    BLACK_MAN = "b"
    BLACK_KING = "B"

    @property
    def side(self) -> Side:
        """The side owning the piece."""
        return Side.WHITE if self in (Piece.WHITE_MAN, Piece.WHITE_KING) else Side.BLACK

    @property
    def is_king(self) -> bool:
        """Whether the piece is a king."""
        return self in (Piece.WHITE_KING, Piece.BLACK_KING)


_MoveFields = tuple[str, tuple[int, ...], tuple[int, ...], bool, tuple[int, int, int, int]]


class Move(_MoveFields):
    """A legal move: its notation, the squares it visits and the pieces it takes.

    Immutable. A tuple underneath (building thousands per second for random play
    and perft is why); compare and hash by effect: origin, destination, taken
    pieces and crowning, so two routes taking the same pieces are the same move.
    """

    __slots__ = ()

    def __new__(
        cls, notation: str, path: tuple[Square, ...], captured: tuple[Square, ...], crowns: bool, raw: RawMove
    ) -> Move:
        return tuple.__new__(cls, (notation, path, captured, crowns, raw[:4]))

    @property
    def notation(self) -> str:
        """Standard notation: "32-28", "26x48"; every landing square ("26x37x48") only if needed."""
        return self[0]

    @property
    def path(self) -> tuple[Square, ...]:
        """Origin, every landing square, destination."""
        return self[1]

    @property
    def captured(self) -> tuple[Square, ...]:
        """Taken squares, in the order they are taken."""
        return self[2]

    @property
    def crowns(self) -> bool:
        """Whether the moving man ends as a king."""
        return self[3]

    @property
    def _raw(self) -> tuple[int, int, int, int]:
        return self[4]

    @property
    def from_square(self) -> Square:
        """The square the piece leaves."""
        return self[1][0]

    @property
    def to_square(self) -> Square:
        """The square the piece ends on."""
        return self[1][-1]

    @property
    def is_capture(self) -> bool:
        """Whether the move takes pieces."""
        return bool(self[2])

    @property
    def long_notation(self) -> str:
        """The move with every landing square, e.g. "26x37x48" (PDN full form)."""
        sep = "x" if self[2] else "-"
        return sep.join(str(s) for s in self[1])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Move):
            return NotImplemented
        return self[4] == other[4]

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Move):
            return NotImplemented
        return self[4] != other[4]

    def __hash__(self) -> int:
        return hash(self[4])

    def __str__(self) -> str:
        return self[0]

    def __repr__(self) -> str:
        return f"Move({self[0]!r}, path={self[1]!r}, captured={self[2]!r}, crowns={self[3]!r})"

    def __reduce__(self) -> tuple[type[Move], tuple[object, ...]]:
        return (Move, (self[0], self[1], self[2], self[3], self[4]))


_FEN_SIDE = re.compile(r"^([WB])(.*)$", re.IGNORECASE)
_MOVE_SPLIT = re.compile(r"[-x:]")


@dataclass(frozen=True, slots=True, repr=False)
class Position:
    """A position: variant, side to move and the pieces (immutable).

    Build one with `Position.initial` or `Position.from_fen`; the underscored
    fields are bitboards in the engine's internal layout.
    """

    variant: Variant
    turn: Side
    _white: int
    _black: int
    _kings: int
    _moves: tuple[Move, ...] | None = field(default=None, compare=False, hash=False)

    # -- construction ---------------------------------------------------------

    @classmethod
    def initial(cls, variant: Variant | str) -> Position:
        """The starting position of `variant`."""
        v = variant_by_name(variant)
        notation = _NOTATIONS[v]
        geo = notation.geometry
        rows = 4 if geo.size == 10 else 3
        black = sum(geo.rows[:rows])
        white = sum(geo.rows[geo.size - rows :])
        return cls(v, v.rules.first, white, black, 0)

    @classmethod
    def from_fen(cls, variant: Variant | str, fen: str) -> Position:
        """Read a PDN FEN such as ``W:W31-50:B1-20`` (kings as ``K12``, ranges allowed)."""
        v = variant_by_name(variant)
        notation = _NOTATIONS[v]
        text = fen.strip().strip('"').strip()
        if text.endswith("."):
            text = text[:-1]
        fields = [f.strip() for f in text.split(":")]
        if not fields or fields[0].upper() not in ("W", "B"):
            raise FenError(f"FEN {fen!r}: must start with the side to move, W or B (e.g. 'W:W31-50:B1-20')")
        turn = Side.WHITE if fields[0].upper() == "W" else Side.BLACK
        boards = {Side.WHITE: 0, Side.BLACK: 0}
        kings = 0
        seen_sides: set[Side] = set()
        for part in fields[1:]:
            if not part:
                continue
            m = _FEN_SIDE.match(part)
            if not m:
                # lidraughts appends fields such as H0 (halfmove clock) and F1 (move number)
                if re.fullmatch(r"[HF]\d+", part, re.IGNORECASE):
                    continue
                raise FenError(f"FEN {fen!r}: field {part!r} should start with W or B")
            side = Side.WHITE if m.group(1).upper() == "W" else Side.BLACK
            if side in seen_sides:
                raise FenError(f"FEN {fen!r}: the {side.value} pieces are listed twice")
            seen_sides.add(side)
            for item in filter(None, (i.strip() for i in m.group(2).split(","))):
                king = item[0] in "Kk"
                body = item[1:] if king else item
                for square in _fen_squares(v, notation, fen, body):
                    bit = notation.square_bit[square]
                    if (boards[Side.WHITE] | boards[Side.BLACK]) & bit:
                        raise FenError(f"FEN {fen!r}: square {square} is given twice")
                    boards[side] |= bit
                    if king:
                        kings |= bit
        pos = cls(v, turn, boards[Side.WHITE], boards[Side.BLACK], kings)
        problem = pos._illegality()
        if problem:
            raise FenError(f"FEN {fen!r}: {problem}")
        return pos

    def _illegality(self) -> str | None:
        geo = _NOTATIONS[self.variant].geometry
        limit = 20 if geo.size == 10 else 12
        for side, bb in ((Side.WHITE, self._white), (Side.BLACK, self._black)):
            if bb.bit_count() > limit:
                return f"{side.value} has {bb.bit_count()} pieces, more than the {limit} of a {self.variant} game"
        if (self._white & ~self._kings) & geo.rows[0]:
            return "a white man stands on White's crowning row"
        if (self._black & ~self._kings) & geo.rows[-1]:
            return "a black man stands on Black's crowning row"
        return None

    # -- reading the position -------------------------------------------------

    def to_fen(self) -> str:
        """The position as a PDN FEN, squares in increasing order, e.g. ``W:W31,32:B1,K2``."""
        notation = _NOTATIONS[self.variant]
        parts = [self.turn.letter]
        for side, bb in ((Side.WHITE, self._white), (Side.BLACK, self._black)):
            squares = sorted(notation.bit_square[b] for b in _bits(bb))
            items = [("K" if notation.square_bit[s] & self._kings else "") + str(s) for s in squares]
            parts.append(side.letter + ",".join(items))
        return ":".join(parts)

    @property
    def pieces(self) -> dict[Square, Piece]:
        """Every occupied square and its piece."""
        notation = _NOTATIONS[self.variant]
        out: dict[Square, Piece] = {}
        for s in range(1, len(notation.square_bit)):
            piece = self.piece_at(s)
            if piece is not None:
                out[s] = piece
        return out

    def piece_at(self, square: Square) -> Piece | None:
        """The piece on `square`, or None."""
        notation = _NOTATIONS[self.variant]
        if not 1 <= square < len(notation.square_bit):
            raise ValueError(f"square {square} is not on the {self.variant} board (1-{len(notation.square_bit) - 1})")
        bit = notation.square_bit[square]
        king = bool(self._kings & bit)
        if self._white & bit:
            return Piece.WHITE_KING if king else Piece.WHITE_MAN
        if self._black & bit:
            return Piece.BLACK_KING if king else Piece.BLACK_MAN
        return None

    def count(self, side: Side, kings: bool | None = None) -> int:
        """How many pieces `side` has (only kings, only men, or all when `kings` is None)."""
        bb = self._white if side is Side.WHITE else self._black
        if kings is True:
            bb &= self._kings
        elif kings is False:
            bb &= ~self._kings
        return bb.bit_count()

    @property
    def key(self) -> tuple[int, int, int, bool]:
        """A hashable summary of the placement and side to move (for repetition counts)."""
        return (self._white, self._black, self._kings, self.turn is Side.WHITE)

    def __repr__(self) -> str:
        return f"Position.from_fen({self.variant.value!r}, {self.to_fen()!r})"

    # -- moves -------------------------------------------------------------------

    def legal_moves(self) -> list[Move]:
        """Every legal move, each distinct move once, by origin then destination square."""
        return list(self._legal())

    def _legal(self) -> tuple[Move, ...]:
        moves = self._moves
        if moves is None:
            moves = self._build_moves()
            object.__setattr__(self, "_moves", moves)
        return moves

    def _build_moves(self) -> tuple[Move, ...]:
        notation = _NOTATIONS[self.variant]
        raw = _ENGINES[self.variant].moves(self._white, self._black, self._kings, self.turn is Side.WHITE)
        if not raw:
            return ()
        sq = notation.bit_square
        if self.variant.rules.numbering is Numbering.STANDARD:
            raw.sort()  # bit order is square-number order on these boards
        else:
            raw.sort(key=lambda m: (sq[m[0]], sq[m[1]], m))
        new = tuple.__new__
        if len(raw[0]) == 4:
            name = notation.bit_text
            return tuple(
                [new(Move, (f"{name[m[0]]}-{name[m[1]]}", (sq[m[0]], sq[m[1]]), (), bool(m[3]), m)) for m in raw]
            )
        ends: dict[tuple[int, int], int] = {}
        for m in raw:
            ends[(m[0], m[1])] = ends.get((m[0], m[1]), 0) + 1
        moves = []
        for m in raw:
            path = tuple([sq[b] for b in m[4]])
            # PDN: "from x to" unless another move joins the same squares, or the
            # king circles back to its own square ("19x19" would say nothing).
            short = ends[(m[0], m[1])] == 1 and m[0] != m[1]
            text = f"{path[0]}x{path[-1]}" if short else "x".join(str(s) for s in path)
            moves.append(Move(text, path, tuple([sq[b] for b in m[5]]), bool(m[3]), m))
        return tuple(moves)

    def _routes(self) -> dict[tuple[int, ...], list[tuple[Square, ...]]]:
        """Every route of each legal capture, duplicates included (any of them parses)."""
        sq = _NOTATIONS[self.variant].bit_square
        raws = _ENGINES[self.variant].routes(self._white, self._black, self._kings, self.turn is Side.WHITE)
        routes: dict[tuple[int, ...], list[tuple[Square, ...]]] = {}
        for m in raws:
            routes.setdefault(m[:4], []).append(tuple(sq[b] for b in m[4]))
        return routes

    def parse_move(self, text: str) -> Move:
        """The legal move written `text`: "32-28", "26x37x48", short "26x48", "26:48", "c3-d4"."""
        notation = _NOTATIONS[self.variant]
        cleaned = text.strip().rstrip("!?*+#").strip()
        tokens = [t.strip() for t in _MOVE_SPLIT.split(cleaned.lower())]
        if len(tokens) < 2 or any(not t for t in tokens):
            raise IllegalMoveError(f"{text!r} is not a move: write squares joined by '-' or 'x', e.g. '32-28'")
        squares: list[int] = []
        for t in tokens:
            if t.isdigit():
                n = int(t)
                if not 1 <= n < len(notation.square_bit):
                    raise IllegalMoveError(
                        f"{text!r}: square {n} is not on the {self.variant} board (1-{len(notation.square_bit) - 1})"
                    )
                squares.append(n)
            elif t in notation.algebraic:
                squares.append(notation.algebraic[t])
            else:
                raise IllegalMoveError(f"{text!r}: {t!r} is not a square of the {self.variant} board")
        wanted = tuple(squares)
        legal = self._legal()
        exact = [m for m in legal if m.path == wanted]
        if len(exact) == 1:
            return exact[0]
        routes = self._routes() if legal and legal[0].is_capture else {}
        paths = {m: routes.get(m._raw, [m.path]) for m in legal}
        exact = [m for m in legal if wanted in paths[m]]
        if len(exact) == 1:
            return exact[0]
        matches = [m for m in legal if any(_is_route(wanted, p) for p in paths[m])]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            listing = ", ".join(m.notation for m in legal) or "none (the game is over)"
            raise IllegalMoveError(
                f"{text!r} is not legal in {self.variant} position {self.to_fen()}; legal moves: {listing}"
            )
        listing = ", ".join(m.long_notation for m in matches)
        raise AmbiguousMoveError(f"{text!r} matches several legal moves ({listing}); give the landing squares")

    def play(self, move: Move | str) -> Position:
        """The position after `move` (a legal `Move` of this position, or its text)."""
        if isinstance(move, str):
            move = self.parse_move(move)
        elif move not in self._legal():  # identity first: a move of this very position is cheap
            raise IllegalMoveError(
                f"{move.long_notation} is not legal in {self.variant} position {self.to_fen()}"
            )
        return self._apply(move._raw)

    def _apply(self, raw: RawMove) -> Position:
        w, b, k = apply(self._white, self._black, self._kings, self.turn is Side.WHITE, raw)
        return Position(self.variant, self.turn.other, w, b, k)

    def is_game_over(self) -> bool:
        """Whether the side to move has no legal move (and so has lost)."""
        return not self.legal_moves()


def perft(position: Position, depth: int, every_route: bool = False) -> int:
    """The number of leaf nodes `depth` plies below `position`.

    By default each distinct move counts once: captures taking the same pieces
    from the same square to the same square are one move, whatever their route
    (the FMJD convention). With `every_route`, each route of a capture counts,
    one per order in which the pieces are taken: the convention of the perft
    tables published with "duplicates kept".

    The last ply is bulk-counted: the moves of each depth-1 position are counted,
    not played (quiet moves by popcount), as perft programs customarily do.
    """
    if depth < 0:
        raise ValueError(f"perft depth must be >= 0, got {depth}")
    engine = _route_engine(position.variant) if every_route else _ENGINES[position.variant]
    return engine.perft(position._white, position._black, position._kings, position.turn is Side.WHITE, depth)


@functools.cache
def _route_engine(variant: Variant) -> Engine:
    """The move generator of `variant` that keeps every capture route (built on first use)."""
    return build_engine(variant.rules, merge_duplicates=False)


def _bits(bb: int) -> list[int]:
    out = []
    while bb:
        b = bb & -bb
        bb ^= b
        out.append(b)
    return out


def _is_route(wanted: tuple[int, ...], path: tuple[int, ...]) -> bool:
    """Whether `wanted` is `path` with some landing squares left out (same ends)."""
    if wanted[0] != path[0] or wanted[-1] != path[-1]:
        return False
    it = iter(path[1:-1])
    return all(any(s == p for p in it) for s in wanted[1:-1])


def _fen_squares(variant: Variant, notation: Notation, fen: str, body: str) -> list[int]:
    top = len(notation.square_bit) - 1

    def one(token: str) -> int:
        t = token.strip().lower()
        if t.isdigit():
            n = int(t)
            if 1 <= n <= top:
                return n
            raise FenError(f"FEN {fen!r}: square {n} is not on the {variant} board (1-{top})")
        if t in notation.algebraic:
            return notation.algebraic[t]
        raise FenError(f"FEN {fen!r}: {token!r} is not a square of the {variant} board")

    if "-" in body:
        lo_text, _, hi_text = body.partition("-")
        lo, hi = one(lo_text), one(hi_text)
        if lo > hi:
            raise FenError(f"FEN {fen!r}: range {body!r} runs backwards")
        return list(range(lo, hi + 1))
    return [one(body)]


__all__ = ["Move", "Numbering", "Piece", "Position", "Square", "perft"]
