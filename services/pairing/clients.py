"""The services the pairing service calls: OpeningService (O-9, O-10) and ClockService (who sat in a game the
tournament closes, T-15 and R-3); RatingService (R-2, T-13) through the kit's `arbiter.kit.ratings.RatingsClient`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import grpc

from arbiter.contracts import clock_pb2, clock_pb2_grpc, openings_pb2, openings_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.kit.errors import Unavailable
from arbiter.openings import initial_fen
from arbiter.openings.modes import OpeningMode
from services.pairing.convert import OPENING_MODE_TO_PROTO

log = logging.getLogger(__name__)


class OpeningsClient:
    """Draws the opening of a round (O-10); idempotent per (competition, round) on the other side."""

    def __init__(self, channel: grpc.aio.Channel, timeout: float) -> None:
        self.stub = openings_pb2_grpc.OpeningServiceStub(channel)
        self.timeout = timeout

    async def draw(self, tournament_id: str, round_number: int, variant: str, mode: OpeningMode,
                   thematic_opening: int | None, no_repeat: bool) -> common.Opening:
        """The opening every board of the round plays (O-10; the Swiss never repeats one)."""
        if mode is OpeningMode.FREE:
            # O-1: nothing to draw; no reason to depend on another service for the initial position.
            return common.Opening(variant=variant, mode=common.OPENING_MODE_FREE, fen=initial_fen(variant))
        request = openings_pb2.DrawOpeningRequest(
            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT, id=tournament_id,
                                              round=round_number),
            variant=variant, mode=OPENING_MODE_TO_PROTO[mode], thematic_opening=thematic_opening or 0,
            no_repeat=no_repeat,
        )
        try:
            response = await self.stub.DrawOpening(request, timeout=self.timeout)
        except grpc.aio.AioRpcError as error:
            raise Unavailable(
                f"the opening service could not draw round {round_number} of {tournament_id}: "
                f"{error.code().name} {error.details()}"
            ) from error
        return response.opening


class ClockClient:
    """Asks the clock service who made a move in games the tournament decides itself (T-15, R-3)."""

    # Calls in flight at once: a closing Swiss of 200 entrants playing home and away has 200 games.
    CONCURRENT_CALLS = 16

    def __init__(self, channel: grpc.aio.Channel, timeout: float) -> None:
        self.stub = clock_pb2_grpc.ClockServiceStub(channel)
        self.timeout = timeout

    async def who_sat(self, game_ids: Sequence[str]) -> dict[str, tuple[bool, bool]]:
        """Game id -> (white sat, black sat): made at least one move; a game the clock never heard of, nobody."""
        gate = asyncio.Semaphore(self.CONCURRENT_CALLS)

        async def one(game_id: str) -> tuple[bool, bool]:
            async with gate:
                try:
                    clock = await self.stub.GetClock(clock_pb2.GetClockRequest(game_id=game_id), timeout=self.timeout)
                except grpc.aio.AioRpcError as error:
                    if error.code() == grpc.StatusCode.NOT_FOUND:
                        return False, False
                    raise Unavailable(
                        f"the clock service could not say who sat in game {game_id}: "
                        f"{error.code().name} {error.details()}"
                    ) from error
            return clock.white.sat, clock.black.sat

        # A task group: the first failure cancels the calls still running (the close is retried whole).
        try:
            async with asyncio.TaskGroup() as group:
                calls = [group.create_task(one(game_id)) for game_id in game_ids]
        except* Unavailable as failed:
            raise failed.exceptions[0] from None
        return {game_id: call.result() for game_id, call in zip(game_ids, calls, strict=True)}
