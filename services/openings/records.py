"""What the openings service keeps: the key of a draw and the draw as stored."""

from __future__ import annotations

from dataclasses import dataclass

from arbiter.competition.types import OpeningMode


@dataclass(frozen=True, slots=True)
class DrawKey:
    """Which draw is meant: one per round of one competition (O-10)."""

    kind: str
    competition_id: str
    round: int

    @property
    def seed(self) -> str:
        """The seed of the pure draw: the same key always draws the same opening."""
        return f"{self.kind}:{self.competition_id}:{self.round}"

    def describe(self) -> str:
        """The key in words, e.g. "round 3 of tournament t_42"."""
        return f"round {self.round} of {self.kind} {self.competition_id}"


@dataclass(frozen=True, slots=True)
class StoredDraw:
    """An opening drawn for one key, as saved and as returned to every later caller."""

    key: DrawKey
    variant: str
    mode: OpeningMode
    number: int | None
    moves: tuple[str, ...]
    fen: str
    class_label: str | None
    level: int | None
    name: str | None
    no_repeat: bool
