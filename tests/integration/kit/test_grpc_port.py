"""A service's gRPC port is its own: a second server cannot bind it and share its connections."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.kit.grpcserver import start_grpc_server
from arbiter.kit.metrics import Metrics
from arbiter_tools.devstack.processes import free_port


async def test_a_second_server_cannot_bind_a_served_port() -> None:
    port = free_port()
    server, _health, bound = await start_grpc_server("127.0.0.1", port, [], Metrics("grpc-port-first"))
    try:
        assert bound == port
        with pytest.raises(OSError, match=f"cannot bind gRPC on 127.0.0.1:{port}"):
            await start_grpc_server("127.0.0.1", port, [], Metrics("grpc-port-second"))
        # The first server still answers on it.
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(None)
