"""gRPC metrics mean what they say: server errors apart from refusals, health checks out, streams on their own.

A real grpc.aio server of the kit (arbiter.kit.grpcserver) in this process, serving a stand-in
TournamentService whose methods succeed, refuse, fail or stream as each test needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import tournament_pb2 as tp
from arbiter.contracts import tournament_pb2_grpc
from arbiter.kit.auth import READERS
from arbiter.kit.errors import PermissionDenied, ServiceError
from arbiter.kit.grpcserver import (
    CALL_CODES,
    REFUSAL_CODES,
    SERVER_ERROR_CODES,
    GrpcService,
    rpc_names,
    start_grpc_server,
)
from arbiter.kit.health import LIVENESS, READINESS
from arbiter.kit.metrics import Metrics
from arbiter_tools.devstack.processes import free_port

SERVICE = "arbiter.contracts.TournamentService"


class _Unavailable(ServiceError):
    code = grpc.StatusCode.UNAVAILABLE


class StandIn(tournament_pb2_grpc.TournamentServiceServicer):
    """GetTournament answers by the id it is asked for; WatchTournament streams until told to stop."""

    def __init__(self) -> None:
        self.stream_started = asyncio.Event()

    async def GetTournament(self, request: tp.GetTournamentRequest, context: grpc.aio.ServicerContext) -> tp.Tournament:
        match request.tournament_id:
            case "bot":
                raise PermissionDenied("bots may not play in tournaments")
            case "bad":
                raise ValueError("tournament ids are letters and digits")
            case "bug":
                raise RuntimeError("a bug")
            case "rating-down":
                raise _Unavailable("the rating service did not answer")
            case "slow":
                await asyncio.sleep(30)
        return tp.Tournament(id=request.tournament_id)

    async def WatchTournament(self, request: tp.WatchTournamentRequest,
                              context: grpc.aio.ServicerContext) -> AsyncIterator[tp.TournamentChange]:
        yield tp.TournamentChange(change="snapshot")
        if request.tournament_id == "forever":
            self.stream_started.set()
            await asyncio.sleep(3600)
        yield tp.TournamentChange(change="finished")


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Metrics, StandIn]]:
    metrics = Metrics("grpc-metrics")
    stand_in = StandIn()
    service = GrpcService(SERVICE, lambda server: tournament_pb2_grpc.add_TournamentServiceServicer_to_server(
        stand_in, server), roles=dict.fromkeys(rpc_names(SERVICE), READERS))
    server, _health, port = await start_grpc_server("127.0.0.1", free_port(), [service], metrics)
    try:
        yield f"127.0.0.1:{port}", metrics, stand_in
    finally:
        await server.stop(None)


def sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"service": "grpc-metrics", **labels})


async def counted(metrics: Metrics, name: str, value: float, **labels: str) -> None:
    """Wait until the server has recorded a call: the caller may hear its status before the server's books close."""
    deadline = asyncio.get_running_loop().time() + 10
    while sample(metrics, name, **labels) != value:
        assert asyncio.get_running_loop().time() < deadline, f"{name}{labels} is {sample(metrics, name, **labels)}"
        await asyncio.sleep(0.02)


async def test_every_series_exists_at_zero_before_the_first_call(served) -> None:
    _address, metrics, _stand_in = served
    for code in CALL_CODES:
        assert sample(metrics, "arbiter_grpc_requests_total", method="JoinTournament", code=code.name) == 0
    for code in REFUSAL_CODES:
        assert sample(metrics, "arbiter_refused_calls_total", method="GetStandings", code=code.name) == 0
    for code in SERVER_ERROR_CODES:
        assert sample(metrics, "arbiter_grpc_server_errors_total", method="CreateTournament", code=code.name) == 0
    assert sample(metrics, "arbiter_grpc_request_seconds_count", method="GetTournament") == 0
    # A stream's time is not a call's: each histogram knows only its own kind of method.
    assert sample(metrics, "arbiter_grpc_request_seconds_count", method="WatchTournament") is None
    assert sample(metrics, "arbiter_grpc_stream_seconds_count", method="WatchTournament") == 0
    assert sample(metrics, "arbiter_grpc_stream_seconds_count", method="GetTournament") is None
    assert sample(metrics, "arbiter_grpc_streams_open", method="WatchTournament") == 0


async def test_refusals_and_server_errors_are_counted_apart(served) -> None:
    address, metrics, _stand_in = served
    expected = {"ok": grpc.StatusCode.OK, "bot": grpc.StatusCode.PERMISSION_DENIED,
                "bad": grpc.StatusCode.INVALID_ARGUMENT, "bug": grpc.StatusCode.INTERNAL,
                "rating-down": grpc.StatusCode.UNAVAILABLE}
    async with grpc.aio.insecure_channel(address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        for tournament_id, code in expected.items():
            try:
                await stub.GetTournament(tp.GetTournamentRequest(tournament_id=tournament_id))
                got = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as error:
                got = error.code()
            assert got == code, tournament_id
    for code in expected.values():
        await counted(metrics, "arbiter_grpc_requests_total", 1, method="GetTournament", code=code.name)
    refused = {"PERMISSION_DENIED", "INVALID_ARGUMENT"}
    failed = {"INTERNAL", "UNAVAILABLE"}
    for name in refused:
        assert sample(metrics, "arbiter_refused_calls_total", method="GetTournament", code=name) == 1
        assert sample(metrics, "arbiter_grpc_server_errors_total", method="GetTournament", code=name) is None
    for name in failed:
        assert sample(metrics, "arbiter_grpc_server_errors_total", method="GetTournament", code=name) == 1
        assert sample(metrics, "arbiter_refused_calls_total", method="GetTournament", code=name) is None
    # Only the unexpected exception is an error of ours to log and count as such.
    assert sample(metrics, "arbiter_errors_total", kind="grpc") == 1
    assert sample(metrics, "arbiter_grpc_request_seconds_count", method="GetTournament") == len(expected)


async def test_a_call_its_caller_gives_up_on_is_cancelled_not_failed(served) -> None:
    address, metrics, _stand_in = served
    async with grpc.aio.insecure_channel(address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await stub.GetTournament(tp.GetTournamentRequest(tournament_id="slow"), timeout=0.2)
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    await counted(metrics, "arbiter_grpc_requests_total", 1, method="GetTournament", code="CANCELLED")
    assert sum(sample(metrics, "arbiter_grpc_server_errors_total", method="GetTournament", code=code.name)
               for code in SERVER_ERROR_CODES) == 0


async def test_health_checks_are_not_traffic(served) -> None:
    address, metrics, _stand_in = served
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        alive = await health.Check(health_pb2.HealthCheckRequest(service=LIVENESS))
        # No readiness check has run in this bare server: not ready, yet alive.
        ready = await health.Check(health_pb2.HealthCheckRequest(service=READINESS))
    assert alive.status == health_pb2.HealthCheckResponse.SERVING
    assert ready.status == health_pb2.HealthCheckResponse.NOT_SERVING
    counted = {sample.labels.get("method") for family in metrics.registry.collect()
               if family.name == "arbiter_grpc_requests" for sample in family.samples
               if sample.name.endswith("_total") and sample.value}
    assert counted == set()
    assert sample(metrics, "arbiter_grpc_requests_total", method="Check", code="OK") is None


async def test_a_stream_is_timed_apart_and_counted_open_while_it_lasts(served) -> None:
    address, metrics, stand_in = served
    async with grpc.aio.insecure_channel(address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        changes = [change.change async for change in stub.WatchTournament(
            tp.WatchTournamentRequest(tournament_id="short"))]
        assert changes == ["snapshot", "finished"]
        call = stub.WatchTournament(tp.WatchTournamentRequest(tournament_id="forever"))
        assert (await call.read()).change == "snapshot"
        await stand_in.stream_started.wait()
        assert sample(metrics, "arbiter_grpc_streams_open", method="WatchTournament") == 1
        call.cancel()
    await counted(metrics, "arbiter_grpc_streams_open", 0, method="WatchTournament")
    await counted(metrics, "arbiter_grpc_stream_seconds_count", 2, method="WatchTournament")
    assert sample(metrics, "arbiter_grpc_requests_total", method="WatchTournament", code="OK") == 1
    assert sample(metrics, "arbiter_grpc_requests_total", method="WatchTournament", code="CANCELLED") == 1
    assert sample(metrics, "arbiter_grpc_request_seconds_count", method="WatchTournament") is None
