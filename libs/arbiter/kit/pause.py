"""The pause of a background loop: wait a while, but return at once when the service stops."""

from __future__ import annotations

import asyncio


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less if `stop` is set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        pass
