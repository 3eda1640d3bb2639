"""OpeningService over gRPC: validate the request, call the pure openings library or the draws, reply."""

from __future__ import annotations

import grpc

from arbiter.contracts import common_pb2, openings_pb2, openings_pb2_grpc
from arbiter.kit.auth import READERS, Role, RpcRoles
from arbiter.kit.errors import InvalidArgument, NotFound
from arbiter.openings import OpeningError, check_mode, eligible, load_table, rating_allowed
from services.openings.convert import (
    draw_key_of,
    draw_message,
    mode_of,
    opening_message,
    thematic_of,
    variant_of,
)
from services.openings.drawing import DrawRequest, OpeningDraws

# Who may call what (arbiter.kit.auth). A draw is stored once per (competition, round) and then
# binds that round (O-10): only the pairing service, which plays the rounds, may draw.
RPC_ROLES: RpcRoles = {
    "DrawOpening": frozenset({Role.PAIRING}),
    "ListOpenings": READERS,
    "GetOpening": READERS,
    "CheckRated": READERS,
}


class OpeningServicer(openings_pb2_grpc.OpeningServiceServicer):
    """DrawOpening, ListOpenings, GetOpening and CheckRated (O-1..O-11, R-4)."""

    def __init__(self, draws: OpeningDraws) -> None:
        self.draws = draws

    async def DrawOpening(
        self, request: openings_pb2.DrawOpeningRequest, context: grpc.aio.ServicerContext
    ) -> openings_pb2.DrawOpeningResponse:
        """The round's opening: drawn on the first call, the same one on every later call (O-10, O-11)."""
        if not request.HasField("competition"):
            raise InvalidArgument("competition is required: its kind, id and round")
        key = draw_key_of(request.competition)
        variant = variant_of(request.variant)
        mode = mode_of(request.mode)
        thematic = thematic_of(request.thematic_opening, mode)
        # Refuse what cannot be played (a table mode outside italian/english) before anything is stored.
        check_mode(variant, mode, thematic)
        drawn = await self.draws.draw(DrawRequest(key, variant, mode, thematic, request.no_repeat))
        return openings_pb2.DrawOpeningResponse(opening=draw_message(drawn))

    async def ListOpenings(
        self, request: openings_pb2.ListOpeningsRequest, context: grpc.aio.ServicerContext
    ) -> openings_pb2.ListOpeningsResponse:
        """The official table of a variant, or the openings a table mode draws from (O-5..O-9)."""
        table = load_table(variant_of(request.variant))
        mode = mode_of(request.mode, required=False)
        openings = table.openings if mode is None else eligible(table, mode)
        return openings_pb2.ListOpeningsResponse(
            openings=[opening_message(opening, mode) for opening in openings],
            title=table.title, source=table.source,
        )

    async def GetOpening(
        self, request: openings_pb2.GetOpeningRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Opening:
        """One official opening by number (O-9); NOT_FOUND outside 1..174."""
        table = load_table(variant_of(request.variant))
        try:
            opening = table.get(request.number)
        except OpeningError as error:
            raise NotFound(str(error)) from None
        return opening_message(opening)

    async def CheckRated(
        self, request: openings_pb2.CheckRatedRequest, context: grpc.aio.ServicerContext
    ) -> openings_pb2.CheckRatedResponse:
        """R-4: may this opening choice with this home-and-away switch be rated, and the reason."""
        variant = variant_of(request.variant)
        mode = mode_of(request.mode)
        thematic = thematic_of(request.thematic_opening, mode)
        verdict = rating_allowed(variant, mode, request.home_and_away, thematic)
        return openings_pb2.CheckRatedResponse(rated_allowed=verdict.allowed, reason=verdict.reason)

