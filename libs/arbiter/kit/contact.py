"""Whether this service is hearing the broker, for decisions taken on the absence of news.

A clock flags a player because no move arrived; during a broker outage no move can arrive,
and when the broker comes back the play site's moves of the outage arrive with their own
times. So a decision made on silence must wait while the broker is unreachable and for a
grace period after it comes back (the backlog is consumed meanwhile). `BrokerContact` pings
the broker and tells since when news may be missing; the caller holds back what fell due
since then.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from arbiter.kit.pause import pause

log = logging.getLogger(__name__)

Ping = Callable[[float], Awaitable[bool]]


class BrokerContact:
    """Pings the broker every `interval` seconds; `missing_since()` says since when news may be missing."""

    def __init__(self, ping: Ping, *, interval: float = 0.5, grace: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, missing_at_start: bool = False) -> None:
        if interval <= 0 or grace < 0:
            raise ValueError("the ping interval must be positive and the grace not negative")
        self.ping = ping
        self.interval = interval
        self.grace = grace
        self.clock = clock
        self._last_ok = clock()
        # `missing_at_start`: a process that was down cannot know since when news is missing, so
        # everything is (-inf) until the broker answers and the grace has passed.
        self._lost_at: float | None = -math.inf if missing_at_start else None
        # After an outage: news from `_held_from` on is missing until `_release_at` (the grace).
        self._held_from: float | None = None
        self._release_at = 0.0
        self.outages = 0

    def heard(self) -> None:
        """The broker answered now."""
        now = self.clock()
        if self._lost_at is not None:
            self._held_from = self._lost_at
            self._release_at = now + self.grace
            if self._lost_at != -math.inf:
                log.warning("broker reachable again; decisions on silence wait for the backlog",
                            extra={"outage_seconds": round(now - self._lost_at, 1), "grace_seconds": self.grace})
            self._lost_at = None
        self._last_ok = now

    def unanswered(self) -> None:
        """The broker did not answer a ping."""
        if self._lost_at is None:
            self._lost_at = self._last_ok
            self.outages += 1
            log.warning("broker unreachable; decisions on silence are held back")

    def missing_since(self) -> float | None:
        """The monotonic instant since which news may be missing (-inf: all of it), or None when all is heard."""
        now = self.clock()
        if self._lost_at is None and now - self._last_ok > 3 * self.interval:
            # A ping that hangs (a paused broker) is an outage before its timeout says so.
            return self._last_ok
        if self._lost_at is not None:
            return self._lost_at
        if self._held_from is not None and now < self._release_at:
            return self._held_from
        return None

    async def run(self, stop: asyncio.Event) -> None:
        """Ping until `stop` is set."""
        while not stop.is_set():
            try:
                answered = await self.ping(2 * self.interval)
            except Exception as error:  # any failure to reach the broker is an unanswered ping
                log.debug("broker ping failed", extra={"error": repr(error)})
                answered = False
            if answered:
                self.heard()
            else:
                self.unanswered()
            await pause(stop, self.interval)
