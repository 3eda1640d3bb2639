"""A stop of the embedded stack runs to its end whatever signals arrive meanwhile."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from arbiter.kit.eventloop import STOP_SIGNALS
from arbiter_tools.devstack.processes import signals_deferred

pytestmark = pytest.mark.usefixtures("stop_signal_handlers")


def _recording(received: list[int]) -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: received.append(signum))


def test_signals_inside_a_stop_are_held_told_once_and_the_first_delivered_after() -> None:
    received: list[int] = []
    said: list[str] = []
    _recording(received)
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    with signals_deferred(said.append):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        assert received == []
    assert received == [signal.SIGTERM]
    assert said == ["already stopping: waiting for every process to end"]
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous
    os.kill(os.getpid(), signal.SIGINT)
    assert received == [signal.SIGTERM, signal.SIGINT]


def test_a_stop_without_signals_says_nothing_and_delivers_nothing() -> None:
    received: list[int] = []
    said: list[str] = []
    _recording(received)
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    with signals_deferred(said.append):
        pass
    assert (received, said) == ([], [])
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous


def test_handlers_come_back_when_the_stop_fails() -> None:
    received: list[int] = []
    _recording(received)
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    with pytest.raises(RuntimeError), signals_deferred(lambda _line: None):
        raise RuntimeError("a server would not stop")
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous


def test_outside_the_main_thread_the_block_runs_with_handlers_untouched() -> None:
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    seen: list[dict[int, object]] = []

    def stop() -> None:
        with signals_deferred(lambda _line: None):
            seen.append({sig: signal.getsignal(sig) for sig in STOP_SIGNALS})

    worker = threading.Thread(target=stop)
    worker.start()
    worker.join()
    assert seen == [previous]


def test_a_stop_inside_a_stop_is_held_by_the_outer_one_and_told_once() -> None:
    received: list[int] = []
    said: list[str] = []
    _recording(received)
    with signals_deferred(said.append):
        with signals_deferred(said.append):
            os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert received == []
    assert received == [signal.SIGINT]
    assert said == ["already stopping: waiting for every process to end"]
