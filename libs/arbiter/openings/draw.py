"""Choosing the opening of a round: free, random legal moves, table draws, thematic (O-1..O-11).

Every draw is a pure function of its seed: the openings service seeds with the
competition id and round, so asking again for the same round returns the same opening.
The pick is `sha256(seed, step) mod n` over a canonical order, which does not depend on
the Python version nor on the order the rules engine generates its moves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

from arbiter.draughts import Position
from arbiter.draughts.variants import Variant
from arbiter.openings.modes import OpeningMode
from arbiter.openings.tables import (
    OFFICIAL_OPENINGS,
    Opening,
    OpeningError,
    eligible,
    get_opening,
    load_table,
    variant_name,
)

__all__ = ["DrawnOpening", "Seed", "draw_opening", "initial_fen", "random_opening"]

Seed = bytes | str | int

_DOMAIN: Final = b"arbiter.openings/v1"


@dataclass(frozen=True, slots=True)
class DrawnOpening:
    """The opening every board of a round starts from (O-10).

    With home and away both games of a pairing use it, colours reversed (O-11).
    """

    variant: str
    mode: OpeningMode
    # Moves in the engine's notation, first mover first; empty for free play (O-1).
    moves: tuple[str, ...]
    # PDN FEN of the position the games start from.
    fen: str
    # The official opening for table and thematic modes (O-5..O-9); None otherwise.
    opening: Opening | None = None

    @property
    def number(self) -> int | None:
        """The official number (1..174), or None for free and random-move openings."""
        return None if self.opening is None else self.opening.number

    @property
    def class_label(self) -> str | None:
        """The official class (PARI, 1N, ...), or None outside the official tables."""
        return None if self.opening is None else self.opening.class_label

    @property
    def level(self) -> int | None:
        """The class level (PARI = 0 .. 4), or None outside the official tables."""
        return None if self.opening is None else self.opening.level


def draw_opening(
    variant: str | Variant,
    mode: OpeningMode,
    *,
    seed: Seed | None = None,
    exclude: Collection[int] = (),
    thematic_opening: int | None = None,
) -> DrawnOpening:
    """The opening of one round for `mode`; deterministic for a given seed (O-1..O-10).

    `exclude` holds the official numbers already drawn in this tournament (O-10: a Swiss
    never draws the same opening twice); it applies to the table draws only, since random
    and free openings have no number. `thematic_opening` is the opening number a thematic
    tournament plays (O-9), and is refused for any other mode.
    """
    variant = variant_name(variant)
    mode = OpeningMode(mode)
    if mode is not OpeningMode.THEMATIC and thematic_opening is not None:
        raise OpeningError(f"only a thematic tournament chooses its opening; mode {mode} ({mode.rule}) draws it")
    if mode is OpeningMode.FREE:
        # O-1: the initial position.
        return DrawnOpening(variant=variant, mode=mode, moves=(), fen=initial_fen(variant))
    if mode is OpeningMode.THEMATIC:
        if thematic_opening is None:
            raise OpeningError(f"a thematic tournament needs the number of its opening, 1..{OFFICIAL_OPENINGS} (O-9)")
        return _official(mode, get_opening(variant, thematic_opening))
    if mode.random_moves:
        return random_opening(variant, mode.random_moves, seed=_required(seed, mode))
    table = load_table(variant)
    pool = eligible(table, mode)
    drawn = frozenset(exclude)
    left = tuple(opening for opening in pool if opening.number not in drawn)
    if not left:
        raise OpeningError(
            f"all {len(pool)} {variant} openings of mode {mode} ({mode.rule}) have already been "
            f"drawn in this tournament, and a Swiss never draws one twice (O-10)"
        )
    return _official(mode, left[_pick(_required(seed, mode), b"table", len(left))])


def random_opening(variant: str | Variant, plies: int, *, seed: Seed) -> DrawnOpening:
    """`plies` (1..3) uniformly random legal moves from the initial position, any variant (O-2..O-4)."""
    variant = variant_name(variant)
    modes = {m.random_moves: m for m in OpeningMode if m.random_moves}
    if plies not in modes:
        raise OpeningError(f"random openings play 1, 2 or 3 moves (O-2..O-4), not {plies}")
    position = Position.initial(variant)
    moves: list[str] = []
    for ply in range(plies):
        # Sorted by notation so the pick does not depend on the engine's generation order.
        legal = sorted(position.legal_moves(), key=lambda move: move.notation)
        if not legal:
            # The game would be over; no variant gets there in three plies, but never loop on nothing.
            break
        move = legal[_pick(seed, b"ply%d" % ply, len(legal))]
        moves.append(move.notation)
        position = position.play(move)
    return DrawnOpening(variant=variant, mode=modes[plies], moves=tuple(moves), fen=position.to_fen())


def initial_fen(variant: str | Variant) -> str:
    """PDN FEN of the initial position of `variant` (O-1)."""
    return Position.initial(variant_name(variant)).to_fen()


def _official(mode: OpeningMode, opening: Opening) -> DrawnOpening:
    return DrawnOpening(
        variant=opening.variant, mode=mode, moves=opening.moves, fen=opening.fen_after, opening=opening
    )


def _required(seed: Seed | None, mode: OpeningMode) -> Seed:
    if seed is None:
        raise OpeningError(f"mode {mode} ({mode.rule}) draws at random and needs a seed, e.g. competition id and round")
    return seed


def _seed_bytes(seed: Seed) -> bytes:
    # Tagged by type so that the int 7, the string "7" and the bytes b"7" are different seeds.
    if isinstance(seed, bool) or not isinstance(seed, (bytes, str, int)):
        raise OpeningError(f"a seed is bytes, str or int, not {type(seed).__name__}")
    if isinstance(seed, bytes):
        return b"b:" + seed
    if isinstance(seed, str):
        return b"s:" + seed.encode("utf-8")
    return b"i:" + str(seed).encode("ascii")


def _pick(seed: Seed, step: bytes, n: int) -> int:
    """A uniform index in 0..n-1 from the seed and the step (bias below 2**-240 for n <= 2**16)."""
    parts = (_DOMAIN, _seed_bytes(seed), step)
    # Length-prefixed, so no seed can pose as another seed plus a step.
    digest = hashlib.sha256(b"".join(len(part).to_bytes(4, "big") + part for part in parts)).digest()
    return int.from_bytes(digest, "big") % n
