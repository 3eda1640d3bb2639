"""Which asyncio event loop a process runs on: uvloop for every service and the load generator."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, TypeVar, get_args

import uvloop

T = TypeVar("T")
EventLoop = Literal["uvloop", "asyncio"]
EVENT_LOOPS: Final[tuple[EventLoop, ...]] = get_args(EventLoop)
DEFAULT_EVENT_LOOP: Final[EventLoop] = "uvloop"
# Ctrl-C, what `kill` and `timeout` send, and the hang-up of a closed terminal or a dropped SSH session:
# its default action ended `arbiter up` without stopping what it started (issue 40).
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_on(event_loop: EventLoop, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `main()` to completion on a new loop of the chosen kind and close it.

    uvloop does the sockets' work (every Kafka, Redis, PostgreSQL and gRPC hop) in C on libuv;
    the standard loop stays one setting away for debugging and for telling a loop problem apart.
    """
    if event_loop == "uvloop":
        return uvloop.run(main())
    return asyncio.run(main())


def _stopping_already(_signum: int, _frame: object) -> None:
    """A stop signal after the first: the stop it asks for is under way."""


def interrupt_once() -> None:
    """Make the first Ctrl-C or SIGTERM raise KeyboardInterrupt, and ignore later ones (a stop then runs).

    A signal the process was started with ignored (SIGINT of a job a shell put in the background)
    stays ignored.
    """
    def interrupt(_signum: int, _frame: object) -> None:
        _ignore_later_stop_signals()
        raise KeyboardInterrupt

    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, interrupt)


def _ignore_later_stop_signals() -> None:
    # A handler, not SIG_IGN: Python reports a signal already pending whose handler became SIG_IGN.
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _stopping_already)


def run_stoppable(event_loop: EventLoop, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`run_on`, where Ctrl-C or SIGTERM cancels `main()` and, once it has unwound, raises KeyboardInterrupt.

    A signal's Python handler raises wherever the loop happens to be, inside a client's callback as
    often as not: the clients were left unclosed and their tasks' errors unretrieved. Cancelling
    lets every `finally` and `async with` of `main()` run. Later signals are ignored, then and
    after (the process is stopping); without a signal the handlers are put back. A signal the
    process was started with ignored stays ignored.
    """
    return run_on(event_loop, lambda: _cancelled_by_signals(main))


async def _cancelled_by_signals(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Await `main()` as a task that the first stop signal cancels."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(main())
    signalled: list[int] = []

    def cancel(signum: int) -> None:
        if not signalled:
            task.cancel()
        signalled.append(signum)

    hooked = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            if handler is not signal.SIG_IGN:
                hooked[sig] = handler
                loop.add_signal_handler(sig, cancel, sig)
    try:
        return await task
    except asyncio.CancelledError:
        if signalled:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig, handler in hooked.items():
            loop.remove_signal_handler(sig)
            # After a signal the process is stopping: a later one must not cut its stop short.
            signal.signal(sig, _stopping_already if signalled else handler)
