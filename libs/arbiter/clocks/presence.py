"""Presence rules for live games: how long a dropped player may stay away (T-16, T-17)."""

from __future__ import annotations

# T-17: after their first move a dropped player has 30 seconds to come back, in any game.
RECONNECT_WINDOW_MS = 30_000


def disconnect_deadline(disconnected_at_ms: int, has_moved: bool) -> int | None:
    """T-17: the instant a dropped player loses, or None when only their clock decides.

    Before the player's first move (T-16, T-17) no extra deadline exists: their clock keeps
    running and flags them if they never come back. After it, they lose unless they are
    back within RECONNECT_WINDOW_MS of the drop.
    """
    if not has_moved:
        return None
    return disconnected_at_ms + RECONNECT_WINDOW_MS
