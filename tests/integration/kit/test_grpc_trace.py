"""gRPC calls run in their trace: the caller's `x-trace-id` or a fresh one, passed on to services called, named back.

Two real grpc.aio servers of the kit (arbiter.kit.grpcserver) in this process, each serving a
stand-in TournamentService: the "front" one calls the "back" one through the kit's channel
(arbiter.kit.grpcclient), as pairing calls rating, and both note the trace id each call ran in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import pytest

from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.auth import READERS, parse_keys
from arbiter.kit.errors import PermissionDenied, ResourceExhausted
from arbiter.kit.fields import is_trace_id
from arbiter.kit.grpcclient import open_channel
from arbiter.kit.grpcserver import RETRY_AFTER_METADATA, GrpcService, rpc_names, start_grpc_server
from arbiter.kit.metrics import Metrics
from arbiter.kit.trace import TRACE_METADATA, current_trace_id, tracing
from arbiter_tools.devstack.processes import free_port
from tests.support.polling import eventually

SERVICE = "arbiter.contracts.TournamentService"
KEY = "trace:trace-secret-0123456789:play-site"


@dataclass
class StandIn(tournament_pb2_grpc.TournamentServiceServicer):
    """GetTournament notes its trace id and, for "call-back", asks the back server the same; Watch streams twice."""

    back: tournament_pb2_grpc.TournamentServiceStub | None = None
    seen: list[str] = field(default_factory=list)

    async def GetTournament(self, request: tp.GetTournamentRequest, context: grpc.aio.ServicerContext) -> tp.Tournament:
        self.seen.append(current_trace_id())
        logging.getLogger("tests.trace.servicer").info("looking up", extra={"tournament_id": request.tournament_id})
        match request.tournament_id:
            case "call-back":
                assert self.back is not None
                await self.back.GetTournament(tp.GetTournamentRequest(tournament_id="back"))
            case "refused":
                raise PermissionDenied("bots may not play in tournaments")
            case "busy":
                raise ResourceExhausted("too many calls; wait", retry_after_ms=1500)
        return tp.Tournament(id=request.tournament_id)

    async def WatchTournament(self, request: tp.WatchTournamentRequest,
                              context: grpc.aio.ServicerContext) -> AsyncIterator[tp.TournamentChange]:
        self.seen.append(current_trace_id())
        yield tp.TournamentChange(change="snapshot")
        yield tp.TournamentChange(change="finished")


async def _serve(stand_in: StandIn, auth: bool = False) -> tuple[grpc.aio.Server, str]:
    service = GrpcService(SERVICE, lambda server: tournament_pb2_grpc.add_TournamentServiceServicer_to_server(
        stand_in, server), roles=dict.fromkeys(rpc_names(SERVICE), READERS))
    server, _health, port = await start_grpc_server(
        "127.0.0.1", free_port(), [service], Metrics("grpc-trace"), auth_keys=parse_keys(KEY) if auth else None)
    return server, f"127.0.0.1:{port}"


@dataclass
class Pair:
    front: StandIn
    back: StandIn
    address: str


@pytest.fixture
async def servers() -> AsyncIterator[Pair]:
    back, front = StandIn(), StandIn()
    back_server, back_address = await _serve(back)
    channel = open_channel(back_address)
    front.back = tournament_pb2_grpc.TournamentServiceStub(channel)
    front_server, front_address = await _serve(front)
    try:
        yield Pair(front, back, front_address)
    finally:
        await channel.close()
        await front_server.stop(None)
        await back_server.stop(None)


async def _get(address: str, tournament_id: str, metadata: tuple[tuple[str, str], ...] = ()) -> tuple[
        grpc.StatusCode, dict[str, str]]:
    async with grpc.aio.insecure_channel(address) as channel:
        call = tournament_pb2_grpc.TournamentServiceStub(channel).GetTournament(
            tp.GetTournamentRequest(tournament_id=tournament_id), metadata=metadata, timeout=10)
        with contextlib.suppress(grpc.aio.AioRpcError):
            await call
        return await call.code(), dict(await call.trailing_metadata() or ())


async def _logged_line(service_log, starting: str) -> dict:
    """The first log line whose message starts so, waiting for it: a call's outcome is logged when it is done,
    which may be just after its client has the answer."""
    found = await eventually(lambda: [line for line in service_log.lines() if str(line["msg"]).startswith(starting)],
                             f"a log line starting {starting!r}")
    return found[0]


async def test_the_callers_trace_id_is_the_calls_the_next_services_and_is_named_back(servers: Pair,
                                                                                      service_log) -> None:
    code, trailing = await _get(servers.address, "call-back", ((TRACE_METADATA, "site-req-42"),))

    assert code is grpc.StatusCode.OK
    assert trailing[TRACE_METADATA] == "site-req-42"
    assert servers.front.seen == servers.back.seen == ["site-req-42"]
    looked_up = [line for line in service_log.lines() if line["msg"] == "looking up"]
    assert [(line["tournament_id"], line["trace_id"]) for line in looked_up] == [
        ("call-back", "site-req-42"), ("back", "site-req-42")]


async def test_a_call_without_one_gets_a_fresh_trace_id_which_its_downstream_calls_share(servers: Pair) -> None:
    first = await _get(servers.address, "call-back")
    second = await _get(servers.address, "call-back")

    traces = [trailing[TRACE_METADATA] for _code, trailing in (first, second)]
    assert all(is_trace_id(trace) for trace in traces) and traces[0] != traces[1]
    assert servers.front.seen == servers.back.seen == traces


async def test_an_unusable_trace_id_is_not_used_and_a_warning_says_why(servers: Pair, service_log) -> None:
    code, trailing = await _get(servers.address, "t-1", ((TRACE_METADATA, "two words"),))

    assert code is grpc.StatusCode.OK
    fresh = trailing[TRACE_METADATA]
    assert is_trace_id(fresh) and servers.front.seen == [fresh]
    [warning] = [line for line in service_log.lines() if line["level"] == "warning"]
    assert "x-trace-id not used" in str(warning["msg"]) and '"two words"' in str(warning["msg"])
    assert warning["trace_id"] == fresh


async def test_refusals_name_the_trace_beside_their_own_trailers_and_their_log_line_names_it(servers: Pair,
                                                                                           service_log) -> None:
    code, trailing = await _get(servers.address, "refused", ((TRACE_METADATA, "site-refused"),))
    assert code is grpc.StatusCode.PERMISSION_DENIED and trailing[TRACE_METADATA] == "site-refused"
    refused = await _logged_line(service_log, "refused GetTournament")
    assert refused["trace_id"] == "site-refused"

    code, trailing = await _get(servers.address, "busy", ((TRACE_METADATA, "site-busy"),))
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (trailing[TRACE_METADATA], trailing[RETRY_AFTER_METADATA]) == ("site-busy", "1500")


async def test_a_call_refused_for_its_token_is_named_its_trace_too(service_log) -> None:
    stand_in = StandIn()
    server, address = await _serve(stand_in, auth=True)
    try:
        code, trailing = await _get(address, "t-1", (("authorization", "Bearer nonsense"), (TRACE_METADATA, "site-7")))
    finally:
        await server.stop(None)
    assert code is grpc.StatusCode.UNAUTHENTICATED and trailing[TRACE_METADATA] == "site-7"
    assert stand_in.seen == []
    refused = await _logged_line(service_log, "refused GetTournament")
    assert refused["trace_id"] == "site-7"


async def test_a_stream_runs_in_its_trace_and_names_it_at_its_end(servers: Pair) -> None:
    async with grpc.aio.insecure_channel(servers.address) as channel:
        call = tournament_pb2_grpc.TournamentServiceStub(channel).WatchTournament(
            tp.WatchTournamentRequest(tournament_id="t-1"), metadata=((TRACE_METADATA, "site-watch"),), timeout=10)
        changes = [change.change async for change in call]
        trailing = dict(await call.trailing_metadata() or ())
    assert changes == ["snapshot", "finished"]
    assert servers.front.seen == ["site-watch"] and trailing[TRACE_METADATA] == "site-watch"


async def test_work_of_a_chain_calls_other_services_in_it_and_a_call_naming_its_own_keeps_it(servers: Pair) -> None:
    async with open_channel(servers.address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        with tracing("from-an-event"):
            await stub.GetTournament(tp.GetTournamentRequest(tournament_id="a"))
            await stub.GetTournament(tp.GetTournamentRequest(tournament_id="b"),
                                     metadata=((TRACE_METADATA, "named-here"),))
        await stub.GetTournament(tp.GetTournamentRequest(tournament_id="c"))
    assert servers.front.seen[:2] == ["from-an-event", "named-here"]
    assert servers.front.seen[2] not in ("from-an-event", "named-here") and is_trace_id(servers.front.seen[2])
