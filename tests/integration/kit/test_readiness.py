"""Honest health: a service is not ready while a dependency does not answer, and alive all the same.

The openings service runs on a Redis of its own, which the test freezes (SIGSTOP) and thaws:
readiness (and the served service's name) turns NOT_SERVING within a few checks and back, liveness
stays SERVING throughout, and /metrics tells which dependency is missing.
"""

from __future__ import annotations

import os
import signal
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.kit.health import LIVENESS, READINESS
from arbiter_tools.devstack.infra import start_redis
from arbiter_tools.devstack.processes import ManagedProcess, free_port
from tests.support.polling import eventually_blocking

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def own_redis(tmp_path) -> Iterator[tuple[str, ManagedProcess]]:
    port = free_port()
    process = start_redis(port, tmp_path / "redis.log")
    try:
        yield f"redis://127.0.0.1:{port}/0", process
    finally:
        os.kill(process.popen.pid, signal.SIGCONT)
        process.stop(signal.SIGTERM)


def status(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                         timeout=5).status


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.read().decode()


def wait_for(address: str, service: str, wanted: int) -> None:
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(wanted)
    eventually_blocking(lambda: status(address, service) == wanted, f"{service!r} {name}")


def test_readiness_follows_the_dependencies_and_liveness_does_not(start_system, own_redis) -> None:
    redis_url, redis = own_redis
    stack = start_system(("openings",), extra_env={
        "REDIS_URL": redis_url, "READINESS_CHECK_SECONDS": "0.2", "READINESS_TIMEOUT_SECONDS": "0.5"})
    service = stack.services["openings"]
    served = "arbiter.contracts.OpeningService"
    assert status(service.grpc_address, READINESS) == SERVING  # what start_system waited for
    page = scrape(service.metrics_url)
    for dependency in ("kafka", "postgresql", "redis"):
        assert f'arbiter_dependency_up{{dependency="{dependency}",service="openings"}} 1.0' in page
    assert f'revision="{stack.revision}",service="openings",version="' in page
    assert 'arbiter_event_loop_lag_seconds{service="openings"}' in page

    os.kill(redis.popen.pid, signal.SIGSTOP)
    wait_for(service.grpc_address, READINESS, NOT_SERVING)
    assert status(service.grpc_address, served) == NOT_SERVING
    assert status(service.grpc_address, LIVENESS) == SERVING
    page = scrape(service.metrics_url)
    assert 'arbiter_dependency_up{dependency="redis",service="openings"} 0.0' in page
    assert 'arbiter_dependency_up{dependency="postgresql",service="openings"} 1.0' in page

    os.kill(redis.popen.pid, signal.SIGCONT)
    wait_for(service.grpc_address, READINESS, SERVING)
    assert status(service.grpc_address, served) == SERVING
    assert 'arbiter_dependency_up{dependency="redis",service="openings"} 1.0' in scrape(service.metrics_url)
