"""Waiting for something another task or process does: poll until it holds, fail at a deadline naming it.

A deadline here bounds a wait, it never measures one: how long the condition took is not checked, so a
loaded machine makes a test slower, never red. Both flavours return the condition's first truthy value;
a failure names `what` was awaited (by default the condition's own source line) and its last value.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# Long enough for a service on a loaded two-core machine; only a condition that never holds waits it out.
DEFAULT_TIMEOUT = 30.0


class Deadline:
    """A monotonic deadline `timeout` seconds from now, and the failure that names what was awaited."""

    def __init__(self, timeout: float, what: str, condition: Callable[[], object]) -> None:
        self.timeout = timeout
        self.what = what or _source_of(condition)
        self._at = time.monotonic() + timeout

    def passed(self) -> bool:
        """Whether the deadline is behind us."""
        return time.monotonic() >= self._at

    def failure(self, last: object) -> AssertionError:
        """The assertion a test fails with: what never happened, and the last value the condition gave."""
        return AssertionError(f"not within {self.timeout:g} s: {self.what} (last seen: {last!r})")


def _source_of(condition: Callable[[], object]) -> str:
    """The condition as its test wrote it (the lambda's line), when the test did not say what it awaits."""
    try:
        return " ".join(inspect.getsource(condition).split())
    except (OSError, TypeError):
        return repr(condition)


async def eventually(condition: Callable[[], T | Awaitable[T]], what: str = "", timeout: float = DEFAULT_TIMEOUT,
                     every: float = 0.05, tolerate: tuple[type[BaseException], ...] = (),
                     until: Callable[[T], object] = bool) -> T:
    """Poll `condition` (plain or async) until `until` accepts its value (by default: truthy); return that value.

    Errors in `tolerate` mean "not yet" (a server restarting, say).
    """
    deadline = Deadline(timeout, what, condition)
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
        except tolerate as error:
            value = error
        if not isinstance(value, BaseException) and until(value):  # type: ignore[arg-type]  # a plain T once awaited
            return value  # type: ignore[return-value]
        if deadline.passed():
            raise deadline.failure(value)
        await asyncio.sleep(every)


def eventually_blocking(condition: Callable[[], T], what: str = "", timeout: float = DEFAULT_TIMEOUT,
                        every: float = 0.1, tolerate: tuple[type[BaseException], ...] = (),
                        until: Callable[[T], object] = bool) -> T:
    """`eventually` for tests without an event loop (threads, subprocesses): blocks between polls."""
    deadline = Deadline(timeout, what, condition)
    while True:
        try:
            value: T | BaseException = condition()
        except tolerate as error:
            value = error
        if not isinstance(value, BaseException) and until(value):
            return value
        if deadline.passed():
            raise deadline.failure(value)
        time.sleep(every)
