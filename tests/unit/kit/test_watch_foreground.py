"""Watch streams give way to the foreground work (the calls being served): counted in and out, waited for."""

from __future__ import annotations

import asyncio

import pytest

from arbiter.kit.watch import Foreground


async def test_quiet_returns_at_once_when_nothing_is_under_way() -> None:
    foreground = Foreground()
    # With nothing to wait for, a slice of streams goes on in the same turn.
    await asyncio.wait_for(foreground.quiet(), timeout=1)
    assert foreground.working == 0


async def test_quiet_waits_for_the_last_piece_of_work_to_end() -> None:
    foreground = Foreground()
    released = asyncio.Event()
    steps: list[str] = []

    async def call(name: str) -> None:
        with foreground.at_work():
            await released.wait()
        steps.append(f"{name} done")

    calls = [asyncio.create_task(call(name)) for name in ("first", "second")]
    await asyncio.sleep(0)
    assert foreground.working == 2
    waiting = asyncio.create_task(foreground.quiet())
    await asyncio.sleep(0)
    assert not waiting.done()
    released.set()
    await waiting
    steps.append("streams")
    await asyncio.gather(*calls)
    assert steps == ["first done", "second done", "streams"]
    assert foreground.working == 0


async def test_quiet_gives_up_waiting_when_the_work_never_ends() -> None:
    foreground = Foreground()
    with foreground.at_work():
        # Streams are late by a few milliseconds at most, however long a call takes.
        await asyncio.wait_for(foreground.quiet(), timeout=5)
        assert foreground.working == 1
    assert foreground.working == 0


async def test_work_that_fails_is_counted_out() -> None:
    foreground = Foreground()
    with pytest.raises(RuntimeError), foreground.at_work():
        raise RuntimeError("the call failed")
    assert foreground.working == 0
    await asyncio.wait_for(foreground.quiet(), timeout=1)
