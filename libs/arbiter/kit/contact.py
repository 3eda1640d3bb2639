"""Whether this service is hearing the broker, for decisions taken on the absence of news.

A clock flags a player because no move arrived; during a broker outage no move can arrive,
and when the broker comes back the play site's moves of the outage arrive with their own
times. So a decision made on silence must wait while the broker is unreachable and for a
grace period after it comes back (the backlog is consumed meanwhile). `BrokerContact` pings
the broker and tells since when news may be missing; the caller holds back what fell due
since then.

The broker answering is not enough: a consumer whose handler fails for an outage of its own
(Redis or PostgreSQL out of reach) has news in hand that it has not applied, and will apply
when its batch comes again. The kit's consumers tell the contact (`stalled`, `handled`), and
news counts as missing from the last batch the stalled consumer handled until it handles
one again and the same grace has passed.
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
                 time_source: Callable[[], float] = time.monotonic, missing_at_start: bool = False) -> None:
        if interval <= 0 or grace < 0:
            raise ValueError("the ping interval must be positive and the grace not negative")
        self.ping = ping
        self.interval = interval
        self.grace = grace
        self.time_source = time_source
        self._last_ok = time_source()
        # `missing_at_start`: a process that was down cannot know since when news is missing, so
        # everything is (-inf) until the broker answers and the grace has passed.
        self._lost_at: float | None = -math.inf if missing_at_start else None
        # After an outage: news from `_held_from` on is missing until `_release_at` (the grace).
        self._held_from: float | None = None
        self._release_at = 0.0
        self.outages = 0
        # Consumers stalled by an outage of their own: since when their news may be missing.
        self._handled_at: dict[str, float] = {}
        self._stalled: dict[str, float] = {}
        self._consumers_held_from: float | None = None
        self._consumers_release_at = 0.0
        self._started_at = time_source()

    def heard(self) -> None:
        """The broker answered now."""
        now = self.time_source()
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

    def stalled(self, consumer: str) -> None:
        """`consumer` failed a batch for want of something it needs: its news since its last handled batch waits."""
        if consumer not in self._stalled:
            self._stalled[consumer] = self._handled_at.get(consumer, self._started_at)
            log.warning("a consumer is stalled; decisions on silence are held back", extra={"consumer": consumer})

    def handled(self, consumer: str) -> None:
        """`consumer` handled a batch: what it held is applied (decisions still wait for the grace)."""
        now = self.time_source()
        since = self._stalled.pop(consumer, None)
        if since is not None:
            held = self._consumers_held_from
            self._consumers_held_from = since if held is None or now >= self._consumers_release_at else min(held, since)
            self._consumers_release_at = now + self.grace
        self._handled_at[consumer] = now

    def missing_since(self) -> float | None:
        """The monotonic instant since which news may be missing (-inf: all of it), or None when all is heard."""
        broker = self._broker_missing_since()
        consumers = self._consumers_missing_since()
        if broker is None or consumers is None:
            return broker if consumers is None else consumers
        return min(broker, consumers)

    def _consumers_missing_since(self) -> float | None:
        if self._stalled:
            return min(self._stalled.values())
        if self._consumers_held_from is not None and self.time_source() < self._consumers_release_at:
            return self._consumers_held_from
        return None

    def _broker_missing_since(self) -> float | None:
        now = self.time_source()
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
