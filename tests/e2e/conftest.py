"""What the end-to-end tests share: a Prometheus server scraping a running system (prometheus_support.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from arbiter_tools.devstack.stack import SystemStack
from tests.e2e.prometheus_support import ALERT_RULES, Prometheus, system_jobs


@pytest.fixture
def prometheus_for(installed: Callable[[str], str], tmp_path: Path) -> Iterator[Callable[..., Prometheus]]:
    """`prometheus_for(stack, rule_files=...)`: a Prometheus scraping `stack` every second, every target up.

    Fails (never skips) without Debian's `prometheus`; every server started is stopped after the test.
    """
    binary = installed("prometheus")  # before anything starts: missing, the test fails at once
    servers: list[Prometheus] = []

    def start(stack: SystemStack, rule_files: Sequence[Path] = (ALERT_RULES,)) -> Prometheus:
        state_dir = tmp_path / f"prometheus-{len(servers)}"
        state_dir.mkdir()
        server = Prometheus(binary, system_jobs(stack), state_dir, rule_files)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
