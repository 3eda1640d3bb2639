"""The real openings, rating and pairing services as processes on the session's infrastructure."""

from __future__ import annotations

import os
import sys
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


@pytest.fixture(scope="module")
def pairing_system(infra_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemStack]:
    """One system per test module, as `start_system` builds it (a system per test would cost minutes).

    Module scope, not package scope: tests/ has no __init__.py, so a "package" fixture would
    live for the whole session, and a pairing service left running there would act on the
    tournaments of every later test (it shares the database and the consumer group).
    """
    stack = SystemStack(
        tmp_path_factory.mktemp("pairing-system"), time_scale=TIME_SCALE, free_ports=True,
        environ={**os.environ, **infra_env}, say=lambda _line: None,
        # A short Kafka session makes consumer groups settle (and a killed member leave) in seconds.
        # Small pools: the session's PostgreSQL is shared by every service of every test.
        extra_env={"RECONCILE_SECONDS": "0.5", "KAFKA_SESSION_TIMEOUT_MS": "3000", "DB_POOL_MAX": "6"},
    )
    try:
        stack.start_infrastructure()
        stack.start_services(PAIRING_SYSTEM)
        stack.wait_serving(timeout=90, names=PAIRING_SYSTEM)
        yield stack
    finally:
        stack.stop()
