"""The one injectable time source of every service, with a time scale for tests and the demo."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta


class TimeSource:
    """Scaled wall-clock time: `origin + (real_now - origin) * scale`.

    With scale 1 this is plain UTC time. Processes that share `scale` and `origin`
    agree on the current instant, so a 60x demo runs a one-hour tournament in a minute.
    """

    def __init__(self, scale: float = 1.0, origin: datetime | None = None) -> None:
        if scale <= 0:
            raise ValueError(f"time scale must be positive, got {scale}")
        if scale != 1.0 and origin is None:
            raise ValueError("a time scale other than 1 needs a time origin shared by every process")
        self.scale = scale
        self.origin = origin.astimezone(UTC) if origin is not None else None
        self._origin_real = origin.timestamp() if origin is not None else 0.0

    def now(self) -> datetime:
        """The current (scaled) instant, timezone-aware UTC."""
        return datetime.fromtimestamp(self.timestamp(), UTC)

    def timestamp(self) -> float:
        """The current (scaled) instant as Unix seconds."""
        real = time.time()
        if self.origin is None:
            return real
        return self._origin_real + (real - self._origin_real) * self.scale

    def now_ms(self) -> int:
        """The current (scaled) instant in Unix milliseconds: what the clock service counts in."""
        return int(self.timestamp() * 1000)

    def real_seconds(self, scaled_seconds: float) -> float:
        """How many real seconds `scaled_seconds` of competition time take."""
        return max(0.0, scaled_seconds / self.scale)

    async def sleep(self, scaled_seconds: float) -> None:
        """Sleep for `scaled_seconds` of competition time."""
        await asyncio.sleep(self.real_seconds(scaled_seconds))

    async def sleep_until(self, instant: datetime) -> None:
        """Sleep until the scaled clock reaches `instant` (returns at once if it has)."""
        await self.sleep((instant - self.now()).total_seconds())

    def after(self, delta: timedelta) -> datetime:
        """The instant `delta` of competition time from now."""
        return self.now() + delta


class ManualTimeSource(TimeSource):
    """Competition time that moves only when told to (`advance`, `move_to`): tests drive the clock, not the host.

    Scale 1, so what services compute in "real" seconds (leases, transit) equals competition seconds. A sleep
    returns once the time has been moved to or past its end; nothing waits on the host's clock. The time is
    kept in whole microseconds, so instants a test names are exact.
    """

    def __init__(self, start: datetime) -> None:
        super().__init__()
        self._now_us = _microseconds(start)
        self._moved: asyncio.Event | None = None

    def now(self) -> datetime:
        """The instant the test last moved the time to, timezone-aware UTC."""
        return _EPOCH + timedelta(microseconds=self._now_us)

    def timestamp(self) -> float:
        """That instant as Unix seconds."""
        return self._now_us / 1_000_000

    def now_ms(self) -> int:
        """That instant in Unix milliseconds, exactly (a float of it may read a millisecond short)."""
        return self._now_us // 1000

    def advance(self, seconds: float) -> datetime:
        """Move the time `seconds` forward (never back) and wake the sleepers it reaches; the new instant."""
        return self._move(round(seconds * 1_000_000))

    def move_to(self, instant: datetime) -> datetime:
        """Move the time to `instant` (at or after now)."""
        return self._move(_microseconds(instant) - self._now_us)

    def _move(self, microseconds: int) -> datetime:
        if microseconds < 0:
            raise ValueError(f"time only moves forward, not {microseconds} us back")
        self._now_us += microseconds
        if self._moved is not None:
            self._moved.set()
            self._moved = None
        return self.now()

    async def sleep(self, scaled_seconds: float) -> None:
        """Wait until the time has been moved `scaled_seconds` past now."""
        await self.sleep_until(self.now() + timedelta(seconds=scaled_seconds))

    async def sleep_until(self, instant: datetime) -> None:
        """Wait until the time has been moved to `instant` or past it."""
        while self._now_us < _microseconds(instant):
            if self._moved is None:
                self._moved = asyncio.Event()
            await self._moved.wait()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _microseconds(instant: datetime) -> int:
    """`instant` as whole microseconds since the epoch (exact, unlike a float timestamp)."""
    return (instant.astimezone(UTC) - _EPOCH) // timedelta(microseconds=1)
