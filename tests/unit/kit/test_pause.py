"""A background loop's pause: the whole wait, or less when the service stops meanwhile."""

from __future__ import annotations

import asyncio
import time

from arbiter.kit.pause import pause


async def test_a_pause_lasts_its_seconds_when_nothing_stops_it() -> None:
    started = time.monotonic()
    await pause(asyncio.Event(), 0.05)
    assert time.monotonic() - started >= 0.05


async def test_a_pause_ends_as_soon_as_the_service_stops() -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    # An hour's pause: only the stop can end it (wait_for keeps a fault from hanging the suite).
    await asyncio.wait_for(pause(stop, 3600), 60)
    assert stop.is_set()
