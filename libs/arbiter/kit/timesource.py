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
