"""The typed RatingService client every service that reads ratings uses (pairing's R-2 and T-13, arena's matching)."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from arbiter.contracts import common_pb2, rating_pb2, rating_pb2_grpc
from arbiter.kit.errors import Unavailable
from arbiter.rating import DEFAULT_RATING

# RatingService.GetRatings answers at most this many players per call (more is INVALID_ARGUMENT).
GET_RATINGS_MAX_PLAYERS = 500


class RatingsClient:
    """Ratings of one (variant, speed); a player the service does not know has the R-5 default.

    A failed call raises `Unavailable` naming the code and the service's message; the caller
    decides whether that refuses its own work (pairing) or falls back (arena: rank only).
    """

    def __init__(self, channel: grpc.aio.Channel, timeout: float) -> None:
        self.stub = rating_pb2_grpc.RatingServiceStub(channel)
        self.timeout = timeout

    async def rating(self, player_id: str, variant: str, speed: common_pb2.Speed) -> float:
        """One player's rating."""
        try:
            reply = await self.stub.GetRating(
                rating_pb2.GetRatingRequest(player_id=player_id, variant=variant, speed=speed), timeout=self.timeout
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return DEFAULT_RATING
            raise _unavailable(f"could not say {player_id}'s rating", error) from error
        return reply.rating.rating if reply.HasField("rating") else DEFAULT_RATING

    async def ratings(self, player_ids: Sequence[str], variant: str, speed: common_pb2.Speed) -> dict[str, float]:
        """Many players' ratings, asked `GET_RATINGS_MAX_PLAYERS` at a time."""
        found: dict[str, float] = {}
        for start in range(0, len(player_ids), GET_RATINGS_MAX_PLAYERS):
            chunk = list(player_ids[start:start + GET_RATINGS_MAX_PLAYERS])
            try:
                reply = await self.stub.GetRatings(
                    rating_pb2.GetRatingsRequest(player_ids=chunk, variant=variant, speed=speed),
                    timeout=self.timeout,
                )
            except grpc.aio.AioRpcError as error:
                raise _unavailable("did not answer", error) from error
            found.update((r.player_id, r.rating.rating) for r in reply.ratings if r.HasField("rating"))
        return {player: found.get(player, DEFAULT_RATING) for player in player_ids}


def _unavailable(what: str, error: grpc.aio.AioRpcError) -> Unavailable:
    return Unavailable(f"the rating service {what}: {error.code().name} {error.details()}")
