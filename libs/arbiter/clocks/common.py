"""What the live (Fischer) and correspondence (Triple Block) clocks share: their error."""

from __future__ import annotations


class ClockError(ValueError):
    """A clock operation the rules do not allow (wrong side, too late, time going backwards)."""
