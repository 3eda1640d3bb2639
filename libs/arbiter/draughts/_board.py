"""Board geometry: the padded bit layout and the constant tables built from it.

Internally the dark squares are numbered 0..n-1 row by row from the top of the
diagram (White at the bottom), row 0 having its dark squares on the odd columns.
Square index `i` lives at bit `i + i // size` of a Python int: one unused
"ghost" bit after every two rows makes the four diagonal steps uniform shifts
(+half, +half+1 down; -half, -half-1 up) and sends every off-board step to a
ghost bit or out of range, so one mask test rejects it (the classic padded
layout used by draughts engines such as Scan and dctl).
"""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.draughts.variants import Numbering

_FILES = "abcdefghij"


@dataclass(frozen=True, slots=True)
class Geometry:
    """Constant tables of one board size."""

    size: int
    half: int
    squares: int
    board: int  # mask of every real square
    bit: tuple[int, ...]  # internal index -> single-bit mask
    index_at: tuple[int, ...]  # bit position -> internal index, -1 on ghosts
    rows: tuple[int, ...]  # row number -> mask
    # rays[d][p]: the squares beyond bit position p in direction d, d in
    # (down-left, down-right, up-right, up-left) = (+half, +half+1, -half, -half-1)
    rays: tuple[tuple[int, ...], ...]

    def coords(self, index: int) -> tuple[int, int]:
        """(row, column) of an internal index; row 0 is the top of the diagram."""
        row, k = divmod(index, self.half)
        return row, 2 * k + (1 if row % 2 == 0 else 0)

    def index_of(self, row: int, col: int) -> int | None:
        """The internal index at (row, column), or None on a light square / off board."""
        if not (0 <= row < self.size and 0 <= col < self.size):
            return None
        if (col % 2 == 1) != (row % 2 == 0):
            return None
        return row * self.half + col // 2


def _build(size: int) -> Geometry:
    half = size // 2
    squares = size * half
    positions = [i + i // size for i in range(squares)]
    bits = tuple(1 << p for p in positions)
    board = sum(bits)
    index_at = [-1] * (max(positions) + 1)
    for i, p in enumerate(positions):
        index_at[p] = i
    rows = tuple(sum(bits[r * half + k] for k in range(half)) for r in range(size))
    steps = (half, half + 1, -half, -half - 1)
    rays: list[tuple[int, ...]] = []
    for step in steps:
        per_position = [0] * (max(positions) + 1)
        for p in positions:
            mask = 0
            q = p + step
            while 0 <= q < len(index_at) and index_at[q] >= 0:
                mask |= 1 << q
                q += step
            per_position[p] = mask
        rays.append(tuple(per_position))
    return Geometry(
        size=size,
        half=half,
        squares=squares,
        board=board,
        bit=bits,
        index_at=tuple(index_at),
        rows=rows,
        rays=tuple(rays),
    )


GEOMETRIES: dict[int, Geometry] = {8: _build(8), 10: _build(10)}


@dataclass(frozen=True, slots=True)
class Notation:
    """Conversion between a variant's square numbers and internal bits."""

    geometry: Geometry
    square_bit: tuple[int, ...]  # square number (1-based; [0] unused) -> bit mask
    bit_square: dict[int, int]  # bit mask -> square number
    bit_text: dict[int, str]  # bit mask -> square number as text
    algebraic: dict[str, int]  # "c3" -> square number (boards with a dark a1 only)

    def square_name(self, square: int) -> str:
        """The algebraic name of a square number ("c3"), for boards with a dark a1."""
        bit = self.square_bit[square]
        index = self.geometry.index_at[bit.bit_length() - 1]
        row, col = self.geometry.coords(index)
        return f"{_FILES[col]}{self.geometry.size - row}"


def build_notation(size: int, numbering: Numbering) -> Notation:
    """The square-number tables of a board size and numbering scheme."""
    geo = GEOMETRIES[size]
    half = geo.half
    square_bit = [0]
    for n in range(1, geo.squares + 1):
        # Spanish numbering is the FID one turned half round: its square n is FID's squares + 1 - n.
        fid = geo.squares + 1 - n if numbering is Numbering.SPANISH else n
        row, k = divmod(fid - 1, half)
        if numbering is not Numbering.STANDARD:
            # FID numbering is the standard one seen in a mirror: same rows,
            # columns reversed (the dark corner is on the player's right).
            k = half - 1 - k
        square_bit.append(geo.bit[row * half + k])
    bit_square = {b: n for n, b in enumerate(square_bit) if n}
    algebraic: dict[str, int] = {}
    if numbering is Numbering.STANDARD:
        for n in range(1, geo.squares + 1):
            index = geo.index_at[square_bit[n].bit_length() - 1]
            row, col = geo.coords(index)
            algebraic[f"{_FILES[col]}{size - row}"] = n
    bit_text = {b: str(n) for b, n in bit_square.items()}
    return Notation(geo, tuple(square_bit), bit_square, bit_text, algebraic)
