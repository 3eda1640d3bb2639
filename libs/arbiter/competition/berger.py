"""Round robin pairings and colours from the Berger tables of FIDE C.05 Annex 1 (T-8, T-12, T-14)."""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BYE",
    "BergerError",
    "BergerRound",
    "Board",
    "berger_round",
    "berger_table",
    "draw_berger_numbers",
    "table_size",
]

# The number a resting entrant is paired with in printed output and JSON (T-8).
BYE: Final = 0


class BergerError(ValueError):
    """A Berger table or number that cannot exist."""


@dataclass(frozen=True, slots=True)
class Board:
    """One game of a round: Berger numbers of White and Black."""

    white: int
    black: int

    def reversed(self) -> Board:
        """The return game of home and away, colours swapped (T-12)."""
        return Board(self.black, self.white)


@dataclass(frozen=True, slots=True)
class BergerRound:
    """One round of a Berger table: its boards in FIDE's printed order and who rests."""

    number: int
    # Boards actually played (the bye board is left out), in the order FIDE prints them.
    boards: tuple[Board, ...]
    # T-8/T-14: for odd n, the entrant paired with the highest table number rests.
    bye: int | None

    def games(self, games_per_pairing: int = 1) -> tuple[Board, ...]:
        """Games in playing order; with 2 per pairing each board is followed by its return game (T-10, T-12)."""
        if games_per_pairing == 1:
            return self.boards
        if games_per_pairing == 2:
            return tuple(game for board in self.boards for game in (board, board.reversed()))
        raise BergerError(f"games per pairing is 1 or 2 (T-12), not {games_per_pairing}")


def table_size(entrants: int) -> int:
    """Size of the FIDE table used: n for even n, n+1 for odd n, its highest number being the bye (T-14)."""
    if entrants < 2:
        raise BergerError(f"a round robin needs at least 2 entrants, not {entrants}")
    return entrants if entrants % 2 == 0 else entrants + 1


# Every round of every round robin asks for its table, which depends on n alone and is immutable.
@functools.lru_cache(maxsize=128)
def berger_table(entrants: int) -> tuple[BergerRound, ...]:
    """Every round of the FIDE Berger table for this many entrants (T-14; n rounds for odd n, n-1 for even)."""
    size = table_size(entrants)
    half = size // 2
    # Round 1 as printed: 1-n, 2-(n-1), ..., n/2-(n/2+1).
    pairs = [(i, size + 1 - i) for i in range(1, half + 1)]
    rounds = []
    for number in range(1, size):
        rounds.append(_as_round(number, pairs, bye_number=size if size != entrants else None))
        # FIDE C.05 Annex 1's construction: every number but n moves on by n/2 (mod n-1), keeping
        # its column; n keeps board 1 and changes colour each round.
        pairs = [(_advance(w, size, half), _advance(b, size, half)) for w, b in pairs]
        white, black = pairs[0]
        pairs[0] = (black, white)
    return tuple(rounds)


def berger_round(entrants: int, number: int) -> BergerRound:
    """Round `number` (1-based) of the Berger table for this many entrants (T-14)."""
    table = berger_table(entrants)
    if not 1 <= number <= len(table):
        raise BergerError(f"a round robin of {entrants} has rounds 1..{len(table)}, not {number}")
    return table[number - 1]


def draw_berger_numbers(entrants: Sequence[str], seed: int | str) -> dict[str, int]:
    """Draw Berger numbers 1..n for the entrants at the start; the same seed gives the same draw (T-14)."""
    if len(set(entrants)) != len(entrants):
        raise BergerError("entrant ids must be distinct to draw Berger numbers (T-14)")
    # Sort first so the draw depends on the set of entrants and the seed, never on arrival order.
    order = sorted(entrants)
    random.Random(str(seed)).shuffle(order)
    return {entrant: number for number, entrant in enumerate(order, start=1)}


def _advance(number: int, size: int, half: int) -> int:
    """Where a number moves from one round to the next in FIDE's construction."""
    if number == size:
        return size
    return (number - 1 + half) % (size - 1) + 1


def _as_round(number: int, pairs: list[tuple[int, int]], bye_number: int | None) -> BergerRound:
    """Turn table pairs into a round; the board of the bye number (odd n) becomes `bye`."""
    boards = []
    bye = None
    for white, black in pairs:
        if bye_number in (white, black):
            bye = black if white == bye_number else white
        else:
            boards.append(Board(white, black))
    return BergerRound(number=number, boards=tuple(boards), bye=bye)
