"""The pause of a background loop: wait a while, but return at once when the service stops."""

from __future__ import annotations

import asyncio
import contextlib


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less if `stop` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
