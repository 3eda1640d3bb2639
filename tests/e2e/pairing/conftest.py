"""The real openings, rating and pairing services as processes on the session's infrastructure."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from arbiter.contracts import clock_pb2_grpc
from arbiter_tools.devstack.stack import SystemStack
from tests.support.playsite import ClockStandIn

# The services a tournament needs; the play site (and the clock service's absence verdicts) are
# played by the stand-in in playsite.py, so no clock service runs: it would flag the stand-in's
# silent games on its own. Its GetClock (who sat in a game pairing closes, T-15) is ClockStandIn's.
PAIRING_SYSTEM = ("openings", "rating", "pairing")
# 5 minutes of competition time (the earliest start, T-4) pass in 2.5 s.
TIME_SCALE = 120.0
SYSTEM_ENV = {
    "RECONCILE_SECONDS": "0.5",
    # tansu answers a JoinGroup after half the session timeout and the pairing service starts four
    # consumers one after the other: a short session makes the start (and the rejoin after the
    # SIGKILL test, where the killed members must time out first) take seconds, not tens of seconds.
    "KAFKA_SESSION_TIMEOUT_MS": "2000",
    "KAFKA_HEARTBEAT_INTERVAL_MS": "400",
    # Small pools: the machine's PostgreSQL (max_connections=100) is shared by every test running.
    "DB_POOL_MIN": "1",
    "DB_POOL_MAX": "4",
}


@pytest.fixture(scope="package")
def clock_stand_in() -> Iterator[tuple[ClockStandIn, str]]:
    """The clock service as far as pairing calls it, on a port of its own: (stand-in, host:port)."""
    stand_in = ClockStandIn()
    server = grpc.server(ThreadPoolExecutor(2))
    clock_pb2_grpc.add_ClockServiceServicer_to_server(stand_in, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield stand_in, f"127.0.0.1:{port}"
    finally:
        server.stop(0)


@pytest.fixture(scope="package")
def pairing_system(infra_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory,
                   clock_stand_in: tuple[ClockStandIn, str]) -> Iterator[SystemStack]:
    """One system for every module of this package, as `start_system` builds it (each start costs 10-20 s).

    The modules use tournaments of their own, so they share it; the SIGKILL test leaves the
    pairing service running again when it ends.
    """
    stack = SystemStack(
        tmp_path_factory.mktemp("pairing-system"), time_scale=TIME_SCALE, free_ports=True,
        environ={**os.environ, **infra_env}, say=lambda _line: None,
        # A consumer group of its own, kept across the SIGKILL restart: every service of the session
        # shares the broker, and tansu can leave a group whose members all left wedged for the next
        # process that joins it (seen after the integration tests' in-process service stopped).
        extra_env={**SYSTEM_ENV, "PAIRING_CONSUMER_GROUP": f"pairing-e2e-{uuid.uuid4().hex[:8]}",
                   "CLOCK_GRPC_ADDR": clock_stand_in[1]},
    )
    try:
        stack.start_infrastructure()
        stack.start_services(PAIRING_SYSTEM)
        stack.wait_serving(timeout=90, names=PAIRING_SYSTEM)
        yield stack
    finally:
        stack.stop()
