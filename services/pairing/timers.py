"""The stored timers that wake the scheduler: a tournament's start (T-4) and its close (T-15)."""

from __future__ import annotations

from typing import Final

START_TIMER: Final = "tournament_start"
CLOSE_TIMER: Final = "tournament_close"


def start_timer_id(tournament_id: str) -> str:
    """The stored timer of a tournament's start time (T-4)."""
    return f"{tournament_id}/start"


def close_timer_id(tournament_id: str) -> str:
    """The stored timer of a tournament's close: the announced end + 10 minutes (T-15)."""
    return f"{tournament_id}/close"
