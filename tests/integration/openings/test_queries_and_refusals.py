"""ListOpenings, GetOpening, CheckRated, and bad input on every RPC, over gRPC against the real service."""

from __future__ import annotations

import uuid

import grpc
import pytest

from arbiter.contracts import common_pb2, openings_pb2, openings_pb2_grpc
from arbiter.openings.modes import OpeningMode as M

PROTO_MODE = {mode: common_pb2.OpeningMode.Value("OPENING_MODE_" + mode.value.upper()) for mode in M}
TOURNAMENT = common_pb2.COMPETITION_KIND_TOURNAMENT


def ref(competition_id: str, round_: int = 1, kind: int = TOURNAMENT) -> common_pb2.CompetitionRef:
    return common_pb2.CompetitionRef(kind=kind, id=competition_id, round=round_)


async def test_tables_for_the_creation_form(openings) -> None:
    """O-5..O-9: whole tables and the part each mode draws from, with classes; one opening by number."""
    stack = openings
    async with grpc.aio.insecure_channel(stack.services["openings"].grpc_address) as channel:
        service = openings_pb2_grpc.OpeningServiceStub(channel)
        italian = await service.ListOpenings(openings_pb2.ListOpeningsRequest(variant="italian"))
        assert [o.number for o in italian.openings] == list(range(1, 175)) and "FID" in italian.title
        assert {o.class_label for o in italian.openings} >= {"PARI", "1N", "1B", "2N", "2B", "3N", "3B", "4N"}
        counts = {}
        for mode in (M.TABLE_UP_TO_1, M.TABLE_UP_TO_2, M.TABLE_UP_TO_3, M.TABLE_ALL, M.THEMATIC):
            reply = await service.ListOpenings(
                openings_pb2.ListOpeningsRequest(variant="italian", mode=PROTO_MODE[mode])
            )
            counts[mode] = len(reply.openings)
            assert all(o.mode == PROTO_MODE[mode] for o in reply.openings)
        assert list(counts.values()) == [83, 126, 166, 174, 174]
        english = await service.ListOpenings(openings_pb2.ListOpeningsRequest(
            variant="english", mode=PROTO_MODE[M.TABLE_UP_TO_3]))
        assert len(english.openings) == 174 and max(o.level for o in english.openings) == 3 and english.source

        opening = await service.GetOpening(openings_pb2.GetOpeningRequest(variant="checkers", number=174))
        assert opening.variant == "english" and opening.number == 174 and len(opening.moves) == 3 and opening.fen
        listed = common_pb2.Opening()
        listed.CopyFrom(english.openings[173])
        listed.ClearField("mode")  # a listed opening carries the mode asked for; a single one none
        assert opening == listed

        check = service.CheckRated
        # the ceiling of the table drawn from counts; home and away makes level 3+ fair.
        verdict = await check(openings_pb2.CheckRatedRequest(variant="italian", mode=PROTO_MODE[M.TABLE_ALL]))
        assert not verdict.rated_allowed and "class 4N" in verdict.reason and "home and away" in verdict.reason
        verdict = await check(openings_pb2.CheckRatedRequest(
            variant="italian", mode=PROTO_MODE[M.TABLE_ALL], home_and_away=True))
        assert verdict.rated_allowed and "R-4" in verdict.reason
        verdict = await check(openings_pb2.CheckRatedRequest(variant="english", mode=PROTO_MODE[M.TABLE_UP_TO_2]))
        assert verdict.rated_allowed and "up to class 2" in verdict.reason
        verdict = await check(openings_pb2.CheckRatedRequest(variant="international", mode=PROTO_MODE[M.RANDOM_3]))
        assert verdict.rated_allowed and "never switch rating off" in verdict.reason
        # Thematic: the chosen opening's class counts.
        by_level = {o.level: o.number for o in italian.openings}
        for level, allowed in ((0, True), (2, True), (3, False), (4, False)):
            verdict = await check(openings_pb2.CheckRatedRequest(
                variant="italian", mode=PROTO_MODE[M.THEMATIC], thematic_opening=by_level[level]))
            assert verdict.rated_allowed is allowed, verdict.reason
            assert f"opening {by_level[level]}" in verdict.reason


def draw(competition=None, variant="italian", mode=M.TABLE_ALL, thematic=0) -> openings_pb2.DrawOpeningRequest:
    request = openings_pb2.DrawOpeningRequest(
        variant=variant, mode=PROTO_MODE.get(mode, mode), thematic_opening=thematic
    )
    if competition is not None:
        request.competition.CopyFrom(competition)
    return request


INVALID = grpc.StatusCode.INVALID_ARGUMENT


async def test_bad_input_is_refused_with_a_reason_and_nothing_is_stored(openings, openings_db) -> None:
    """Every RPC refuses bad input with its status code and a message for people; no draw is saved."""
    stack = openings
    tid = f"t-bad-{uuid.uuid4().hex[:8]}"
    drawing = [
        (draw(None), INVALID, "competition is required"),
        (draw(ref(tid, kind=common_pb2.COMPETITION_KIND_UNSPECIFIED)), INVALID, "competition.kind is required"),
        (draw(ref(tid, kind=42)), INVALID, "unknown competition kind 42"),
        (draw(ref("")), INVALID, "competition.id is required"),
        (draw(ref(" " + tid)), INVALID, "has surrounding spaces"),
        (draw(ref("x" * 129)), INVALID, "has 129 characters; competition ids have at most 128"),
        (draw(ref(tid, 0)), INVALID, f"tournament {tid}: rounds are numbered from 1, got round 0"),
        (draw(ref(tid, -1, kind=common_pb2.COMPETITION_KIND_ARENA)), INVALID, "cannot be negative"),
        (draw(ref(tid), variant=""), INVALID, "the variant is required"),
        (draw(ref(tid), variant="chess"), INVALID, "unknown draughts variant 'chess'; known variants:"),
        (draw(ref(tid), mode=0), INVALID, "the opening mode is required: free, random_1"),
        (draw(ref(tid), mode=99), INVALID, "unknown opening mode 99"),
        (draw(ref(tid), variant="international", mode=M.TABLE_UP_TO_1), INVALID,
         "variant international has no official opening table; table modes are for italian and english"),
        (draw(ref(tid), variant="russian", mode=M.THEMATIC, thematic=5), INVALID,
         "variant russian has no official opening table"),
        (draw(ref(tid), mode=M.THEMATIC), INVALID, "numbered 1..174; got 0 (O-9)"),
        (draw(ref(tid), mode=M.THEMATIC, thematic=175), INVALID, "numbered 1..174; got 175 (O-9)"),
        (draw(ref(tid), mode=M.TABLE_UP_TO_2, thematic=12), INVALID,
         "thematic_opening 12 is only for the thematic mode; mode table_up_to_2 (O-6)"),
        (draw(ref(tid), variant="international", mode=M.FREE, thematic=3), INVALID, "only for the thematic mode"),
    ]
    listing = [
        (openings_pb2.ListOpeningsRequest(), INVALID, "the variant is required"),
        (openings_pb2.ListOpeningsRequest(variant="brazilian"), INVALID, "variant brazilian has no official"),
        (openings_pb2.ListOpeningsRequest(variant="italian", mode=PROTO_MODE[M.RANDOM_2]), INVALID,
         "mode random_2 (O-3) does not draw from the official table"),
        (openings_pb2.ListOpeningsRequest(variant="italian", mode=77), INVALID, "unknown opening mode 77"),
    ]
    getting = [
        (openings_pb2.GetOpeningRequest(variant="italian", number=175), grpc.StatusCode.NOT_FOUND,
         "italian has openings 1..174; there is no opening 175"),
        (openings_pb2.GetOpeningRequest(variant="english", number=0), grpc.StatusCode.NOT_FOUND, "no opening 0"),
        (openings_pb2.GetOpeningRequest(variant="pool", number=3), INVALID, "variant pool has no official"),
        (openings_pb2.GetOpeningRequest(number=3), INVALID, "the variant is required"),
    ]
    checking = [
        (openings_pb2.CheckRatedRequest(variant="italian"), INVALID, "the opening mode is required"),
        (openings_pb2.CheckRatedRequest(mode=PROTO_MODE[M.FREE]), INVALID, "the variant is required"),
        (openings_pb2.CheckRatedRequest(variant="spanish", mode=PROTO_MODE[M.TABLE_UP_TO_3]), INVALID,
         "variant spanish has no official opening table"),
        (openings_pb2.CheckRatedRequest(variant="italian", mode=PROTO_MODE[M.THEMATIC]), INVALID, "got 0 (O-9)"),
        (openings_pb2.CheckRatedRequest(variant="italian", mode=PROTO_MODE[M.RANDOM_1], thematic_opening=4), INVALID,
         "only for the thematic mode"),
    ]
    async with grpc.aio.insecure_channel(stack.services["openings"].grpc_address) as channel:
        service = openings_pb2_grpc.OpeningServiceStub(channel)
        for method, cases in ((service.DrawOpening, drawing), (service.ListOpenings, listing),
                              (service.GetOpening, getting), (service.CheckRated, checking)):
            for request, code, message in cases:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await method(request)
                assert (refused.value.code(), message) == (code, message) and message in refused.value.details(), (
                    request, refused.value.details())
    assert await openings_db.fetchval("SELECT count(*) FROM opening_draws WHERE competition_id LIKE '%t-bad-%'") == 0
    assert await openings_db.fetchval("SELECT count(*) FROM opening_draws WHERE competition_id = ''") == 0
