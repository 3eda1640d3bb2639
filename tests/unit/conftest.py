"""Fixtures shared by unit tests of more than one folder."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from arbiter.kit.eventloop import STOP_SIGNALS


@pytest.fixture
def stop_signal_handlers() -> Iterator[None]:
    """Ctrl-C's and SIGTERM's handlers as they were, whatever the test set."""
    # pytest and its xdist workers run tests in the main thread, the only one that may set handlers.
    assert threading.current_thread() is threading.main_thread(), "signal handlers are set in the main thread only"
    saved = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
