"""What the arena service calls: RatingService for the matching (close in rating), cached per arena."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from arbiter.contracts import common_pb2
from arbiter.kit.errors import Unavailable
from arbiter.kit.ratings import RatingsClient
from arbiter.rating import DEFAULT_RATING

log = logging.getLogger(__name__)


class RatingCache:
    """Each player's rating for the arena's variant and speed, asked once per arena."""

    def __init__(self, client: RatingsClient | None, retry_seconds: float) -> None:
        self.client = client
        self.retry_seconds = retry_seconds
        self._cache: dict[str, dict[str, float]] = {}
        self._down_until = 0.0

    async def ratings(
        self, arena_id: str, variant: str, speed: common_pb2.Speed, players: Sequence[str]
    ) -> tuple[dict[str, float], bool]:
        """Ratings of `players` and whether all came from the rating service (False: R-5 default used)."""
        cached = self._cache.setdefault(arena_id, {})
        missing = [p for p in players if p not in cached]
        complete = True
        if missing:
            if self.client is None or time.monotonic() < self._down_until:
                complete = False
            else:
                try:
                    cached.update(await self.client.ratings(missing, variant, speed))
                except Unavailable as error:
                    # Pair by rank only for a while rather than stall every pass on a dead service.
                    self._down_until = time.monotonic() + self.retry_seconds
                    complete = False
                    log.warning("rating service unavailable; pairing by rank only", extra={"error": error.message})
        return {p: cached.get(p, DEFAULT_RATING) for p in players}, complete

    def forget(self, arena_id: str) -> None:
        """Drop an arena's cache (it finished, or this replica no longer pairs it)."""
        self._cache.pop(arena_id, None)
