"""Errors raised by the draughts rules engine; all are `ValueError`s."""

from __future__ import annotations


class DraughtsError(ValueError):
    """Base class of every error raised by `arbiter.draughts`."""


class UnknownVariantError(DraughtsError):
    """A variant name that the engine does not know."""


class FenError(DraughtsError):
    """A FEN string that cannot be read, or that describes an impossible position."""


class IllegalMoveError(DraughtsError):
    """A move that is not legal in the position it was played in."""


class AmbiguousMoveError(IllegalMoveError):
    """Move text that matches more than one legal move; give more squares."""
