"""A whole system for one test or module (a plain module next to the tests: pytest runs with importlib imports)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from arbiter_tools.devstack.stack import SystemStack


@contextmanager
def serving(stack: SystemStack, timeout: float = 90.0) -> Iterator[SystemStack]:
    """`stack` with its infrastructure and five services started and SERVING; everything stopped on leaving."""
    try:
        stack.start_infrastructure()
        stack.start_services()
        stack.wait_serving(timeout=timeout)
        yield stack
    finally:
        stack.stop()
