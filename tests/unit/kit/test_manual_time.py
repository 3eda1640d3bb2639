"""ManualTimeSource: a time the test moves; sleepers wake when it is moved past their end, never on their own."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest

from arbiter.kit.timesource import ManualTimeSource
from tests.support.polling import eventually

START = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def test_the_time_stands_still_until_moved_and_only_moves_forward() -> None:
    time = ManualTimeSource(START)
    assert time.now() == START and abs(time.timestamp() - START.timestamp()) < 1e-6
    assert time.advance(1.5) == START + timedelta(seconds=1.5)
    assert time.move_to(START + timedelta(seconds=30)) == START + timedelta(seconds=30)
    assert time.after(timedelta(seconds=5)) == START + timedelta(seconds=35)
    assert time.real_seconds(7) == 7 and time.scale == 1
    with pytest.raises(ValueError, match="forward"):
        time.advance(-1)
    with pytest.raises(ValueError, match="forward"):
        time.move_to(START)


def test_every_instant_reads_as_its_own_millisecond() -> None:
    """What the clock service counts in, `now_ms()`, is the instant's millisecond, never the one before.

    Between 2^31 s (2038) and 2^41 ms (2039) a float of most instants reads a millisecond short: ms come exact.
    """
    epoch = datetime.fromtimestamp(0, UTC)
    rng = random.Random(43)
    instants = sorted(rng.randint(2**31 * 1000, 2**41) for _ in range(2_000))
    time = ManualTimeSource(epoch + timedelta(milliseconds=instants[0]))
    for instant_ms in instants:
        time.move_to(epoch + timedelta(milliseconds=instant_ms))
        assert time.now_ms() == instant_ms
        assert time.now() == epoch + timedelta(milliseconds=instant_ms)
    time.advance(0.001)
    assert time.now_ms() == instants[-1] + 1


async def test_a_sleeper_wakes_once_the_time_reaches_its_end() -> None:
    time = ManualTimeSource(START)
    woken: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await time.sleep(seconds)
        woken.append(name)

    tasks = [asyncio.create_task(sleeper("soon", 10)), asyncio.create_task(sleeper("later", 30))]
    await asyncio.sleep(0)
    time.advance(9)
    await asyncio.sleep(0)
    assert woken == []
    time.advance(1)
    await eventually(lambda: woken == ["soon"], "the 10 s sleeper woken, the 30 s one not")
    time.move_to(START + timedelta(seconds=45))
    await asyncio.gather(*tasks)
    assert woken == ["soon", "later"]
    await time.sleep_until(START)  # in the past: at once
