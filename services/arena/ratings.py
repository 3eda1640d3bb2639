"""Ratings for the matching (close in rating), cached per arena; pairing never waits long for them."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import grpc

from arbiter.contracts import rating_pb2, rating_pb2_grpc
from arbiter.rating import DEFAULT_RATING

log = logging.getLogger(__name__)
# RatingService.GetRatings answers at most this many players per call.
_CHUNK = 500


class RatingCache:
    """Each player's rating for the arena's variant and speed, asked once per arena."""

    def __init__(self, channel: grpc.aio.Channel | None, timeout: float, retry_seconds: float) -> None:
        self.stub = rating_pb2_grpc.RatingServiceStub(channel) if channel is not None else None
        self.timeout = timeout
        self.retry_seconds = retry_seconds
        self._cache: dict[str, dict[str, float]] = {}
        self._down_until = 0.0

    async def ratings(
        self, arena_id: str, variant: str, speed: int, players: Sequence[str]
    ) -> tuple[dict[str, float], bool]:
        """Ratings of `players` and whether all came from the rating service (False: R-5 default used)."""
        cached = self._cache.setdefault(arena_id, {})
        missing = [p for p in players if p not in cached]
        complete = True
        if missing:
            if self.stub is None or time.monotonic() < self._down_until:
                complete = False
            else:
                try:
                    for start in range(0, len(missing), _CHUNK):
                        reply = await self.stub.GetRatings(
                            rating_pb2.GetRatingsRequest(  # type: ignore[arg-type]
                                player_ids=missing[start:start + _CHUNK], variant=variant, speed=speed),
                            timeout=self.timeout,
                        )
                        for item in reply.ratings:
                            cached[item.player_id] = item.rating.rating if item.HasField("rating") else DEFAULT_RATING
                except grpc.aio.AioRpcError as error:
                    # Pair by rank only for a while rather than stall every pass on a dead service.
                    self._down_until = time.monotonic() + self.retry_seconds
                    complete = False
                    log.warning("rating service unavailable; pairing by rank only",
                                extra={"error": f"{error.code().name} {error.details()}"})
        return {p: cached.get(p, DEFAULT_RATING) for p in players}, complete

    def forget(self, arena_id: str) -> None:
        """Drop an arena's cache (it finished, or this replica no longer pairs it)."""
        self._cache.pop(arena_id, None)
