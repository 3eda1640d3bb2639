"""Helpers of the pairing integration tests: collaborator stand-ins, the service under test, builders.

The two services the pairing service calls are small gRPC stand-ins backed by the pure
libraries (the opening draw) and a dict (ratings), so these tests do not depend on those
services' progress; the e2e tests run against the real ones.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

from arbiter.competition.types import OpeningMode
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import openings_pb2, openings_pb2_grpc, rating_pb2, rating_pb2_grpc, tournament_pb2_grpc
from arbiter.kit.timesource import TimeSource
from arbiter.openings import draw_opening
from services.pairing.convert import OPENING_MODE, OPENING_MODE_TO_PROTO
from services.pairing.settings import PairingSettings

TIME_SCALE = 120.0


class OpeningsStandIn(openings_pb2_grpc.OpeningServiceServicer):
    """DrawOpening from the pure library, seeded per (competition, round), remembering Swiss draws (O-10)."""

    def __init__(self) -> None:
        self.drawn: dict[str, list[int]] = {}
        self.calls = 0

    async def DrawOpening(self, request, context):  # noqa: N802
        self.calls += 1
        mode = OPENING_MODE[request.mode]
        ref = request.competition
        used = self.drawn.setdefault(ref.id, [])
        drawn = draw_opening(request.variant, mode, seed=f"{ref.id}:{ref.round}",
                             exclude=used if request.no_repeat else (),
                             thematic_opening=request.thematic_opening or None)
        if drawn.number is not None and mode is not OpeningMode.THEMATIC:
            used.append(drawn.number)
        return openings_pb2.DrawOpeningResponse(opening=common.Opening(
            variant=drawn.variant, mode=OPENING_MODE_TO_PROTO[mode], number=drawn.number or 0,
            moves=list(drawn.moves), fen=drawn.fen, class_label=drawn.class_label or "", level=drawn.level or 0,
        ))


class RatingsStandIn(rating_pb2_grpc.RatingServiceServicer):
    """Ratings from a dict; everyone else has the R-5 default."""

    def __init__(self) -> None:
        self.ratings: dict[str, float] = {}

    def _one(self, player_id, request):
        return rating_pb2.PlayerRating(player_id=player_id, variant=request.variant, speed=request.speed,
                                       rating=common.Rating(rating=self.ratings.get(player_id, 1500.0),
                                                            deviation=350, volatility=0.06))

    async def GetRating(self, request, context):  # noqa: N802
        return self._one(request.player_id, request)

    async def GetRatings(self, request, context):  # noqa: N802
        return rating_pb2.GetRatingsResponse(ratings=[self._one(p, request) for p in request.player_ids])


@dataclass
class PairingUnderTest:
    """The running service and what the tests need to reach it."""

    address: str
    settings: PairingSettings
    clock: TimeSource
    ratings: RatingsStandIn
    openings: OpeningsStandIn
    stub: tournament_pb2_grpc.TournamentServiceStub
    db: asyncpg.Pool

    def starts_in(self, minutes: float = 5.5) -> datetime:
        """A start time `minutes` of competition time from now (T-4 needs 5 min .. 14 days)."""
        return self.clock.now() + timedelta(minutes=minutes)


def player(prefix: str = "p") -> str:
    """A fresh player id."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def registered(player_id: str) -> common.Actor:
    """A registered account (A-1)."""
    return common.Actor(player_id=player_id, kind=common.ACCOUNT_KIND_REGISTERED)
