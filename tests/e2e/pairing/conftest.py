"""The real openings, rating and pairing services as processes on the session's infrastructure."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    # Helpers are plain modules next to the tests (pytest runs with --import-mode=importlib).
    sys.path.insert(0, str(_HERE))

from arbiter.devstack.stack import SystemStack  # noqa: E402

# The services a tournament needs; the play site (and the clock service's absence verdicts) are
# played by the stand-in in playsite.py, so no clock service runs: it would flag the stand-in's
# silent games on its own.
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
def pairing_system(infra_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemStack]:
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
        extra_env={**SYSTEM_ENV, "PAIRING_CONSUMER_GROUP": f"pairing-e2e-{uuid.uuid4().hex[:8]}"},
    )
    try:
        stack.start_infrastructure()
        stack.start_services(PAIRING_SYSTEM)
        stack.wait_serving(timeout=90, names=PAIRING_SYSTEM)
        yield stack
    finally:
        stack.stop()
