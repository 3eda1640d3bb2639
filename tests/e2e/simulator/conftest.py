"""One running system (the five services at 60x, service tokens required) shared by a module's simulator tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from arbiter_tools.devstack.stack import SystemStack
from tests.e2e.system_support import serving

TIME_SCALE = 60.0


@pytest.fixture(scope="module")
def system(infra_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[SystemStack]:
    """The five services on the session's infrastructure; each test plays with its own accounts."""
    with serving(SystemStack(tmp_path_factory.mktemp("simulator-system"), time_scale=TIME_SCALE, free_ports=True,
                             environ={**os.environ, **infra_env}, say=lambda _line: None, auth=True)) as stack:
        yield stack
