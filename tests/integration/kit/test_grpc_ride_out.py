"""A client that rides out an outage (`arbiter simulate` once aborted on one longer than the channel's own retries).

`open_channel(..., ride_out_seconds=...)` (the simulator's play site uses it) calls again while the
answer is UNAVAILABLE, with backoff: a server that appears seconds later answers the call that was
already waiting. Without it, the same call fails after the channel's own second of retries.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from arbiter.kit.grpcclient import open_channel
from arbiter_tools.devstack.processes import free_port


async def serve_health(port: int, after: float) -> grpc.aio.Server:
    await asyncio.sleep(after)  # the outage the client rides out
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server


async def test_a_call_rides_out_a_server_that_comes_back_late_and_without_it_fails() -> None:
    port = free_port()
    async with open_channel(f"127.0.0.1:{port}") as plain:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest())
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    late = asyncio.create_task(serve_health(port, after=4.0))
    try:
        async with open_channel(f"127.0.0.1:{port}", ride_out_seconds=60) as patient:
            reply = await health_pb2_grpc.HealthStub(patient).Check(health_pb2.HealthCheckRequest())
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await (await late).stop(None)


async def test_a_call_with_a_deadline_rides_out_no_longer_than_it() -> None:
    port = free_port()
    async with open_channel(f"127.0.0.1:{port}", ride_out_seconds=3600) as patient:
        call = health_pb2_grpc.HealthStub(patient).Check(health_pb2.HealthCheckRequest(), timeout=2)
        # Riding out the hour instead would end in the TimeoutError of this bound, not in the call's error.
        with pytest.raises(grpc.aio.AioRpcError):
            await asyncio.wait_for(call, 120)
