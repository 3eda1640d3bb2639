"""Ctrl-C and SIGTERM of a CLI command: the first one stops (its async work unwinds), later ones wait for that."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from arbiter.kit.eventloop import EVENT_LOOPS, STOP_SIGNALS, EventLoop, interrupt_once, run_stoppable

pytestmark = pytest.mark.usefixtures("stop_signal_handlers")


@pytest.mark.parametrize("first", STOP_SIGNALS)
def test_the_first_signal_interrupts_and_later_ones_are_ignored(first: int) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupt_once()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), first)
    for sig in STOP_SIGNALS:
        os.kill(os.getpid(), sig)  # would interrupt or end the test process if not ignored


def test_a_signal_ignored_from_the_start_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupt_once()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize("event_loop", EVENT_LOOPS)
@pytest.mark.parametrize("first", STOP_SIGNALS)
def test_a_signal_cancels_the_work_which_unwinds_before_the_interrupt(event_loop: EventLoop, first: int) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    unwound: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), first)
            await asyncio.sleep(30)
        finally:
            # A client closing: it takes loop turns, during which another signal must not cut in.
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0.01)
            unwound.append("closed")

    with pytest.raises(KeyboardInterrupt):
        run_stoppable(event_loop, work)
    assert unwound == ["closed"]
    for sig in STOP_SIGNALS:
        os.kill(os.getpid(), sig)  # later ones are ignored: the process is stopping


@pytest.mark.parametrize("event_loop", EVENT_LOOPS)
def test_without_a_signal_the_result_comes_back_and_the_handlers_too(event_loop: EventLoop) -> None:
    interrupt_once()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    async def work() -> int:
        await asyncio.sleep(0)
        return 42

    assert run_stoppable(event_loop, work) == 42
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == previous


def test_an_error_of_the_work_is_its_own() -> None:
    async def work() -> None:
        raise LookupError("no such tournament")

    with pytest.raises(LookupError, match="no such tournament"):
        run_stoppable("uvloop", work)


def test_a_cancellation_from_inside_is_not_taken_for_a_signal() -> None:
    async def work() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run_stoppable("asyncio", work)
