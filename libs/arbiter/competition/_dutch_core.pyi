"""The compiled core of the FIDE Dutch pairing engine (_dutch_core.c): its signatures, for the type checker."""

from collections.abc import Sequence

def pair(
    scores: Sequence[int],
    eligible: Sequence[int],
    prefs: Sequence[int],
    imbalances: Sequence[int],
    repeated: Sequence[int],
    strong: Sequence[int],
    float1: Sequence[int],
    float2: Sequence[int],
    played: Sequence[int],
    topscorer: Sequence[int],
    forbidden: Sequence[tuple[int, int]],
    rounds_played: int,
    /,
) -> list[int] | None:
    """Pair one round by the FIDE Dutch system: each player's opponent (-1 for the bye), or None."""

def max_weight_matching(
    n: int, edges: Sequence[tuple[int, int, int]], updates: Sequence[tuple[int, Sequence[tuple[int, int]]]], /
) -> list[list[int]]:
    """A maximum-weight matching of n vertices, then again after each update of one vertex's edges."""
