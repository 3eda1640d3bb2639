"""Which asyncio event loop a process runs on: uvloop for every service and the load generator."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, TypeVar, get_args

import uvloop

T = TypeVar("T")
EventLoop = Literal["uvloop", "asyncio"]
EVENT_LOOPS: Final[tuple[EventLoop, ...]] = get_args(EventLoop)
DEFAULT_EVENT_LOOP: Final[EventLoop] = "uvloop"


def run_on(event_loop: EventLoop, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `main()` to completion on a new loop of the chosen kind and close it.

    uvloop does the sockets' work (every Kafka, Redis, PostgreSQL and gRPC hop) in C on libuv;
    the standard loop stays one setting away for debugging and for telling a loop problem apart.
    """
    if event_loop == "uvloop":
        return uvloop.run(main())
    return asyncio.run(main())
