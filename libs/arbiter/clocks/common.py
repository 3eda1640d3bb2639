"""Vocabulary shared by the live (Fischer) and correspondence (Triple Block) clocks."""

from __future__ import annotations

import enum


class ClockError(ValueError):
    """A clock operation the rules do not allow (wrong side, too late, time going backwards)."""


class Side(enum.StrEnum):
    """The two players of a game; which one moves first depends on the variant."""

    WHITE = "white"
    BLACK = "black"

    @property
    def other(self) -> Side:
        """The opponent's side."""
        return Side.BLACK if self is Side.WHITE else Side.WHITE
