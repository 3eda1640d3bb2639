"""Proof that a consumer has handled what was published: its group's commits reach the topics' ends.

The kit commits a batch after its handler returns, so once a group has committed every partition's
end, every record published before the look has been handled. A test that checks "this changed
nothing" waits for that, not for a sleep long enough on a quiet machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaConsumer

from arbiter.kit.events import Topic
from arbiter_tools.chaos import group_lag
from tests.support.polling import DEFAULT_TIMEOUT, eventually


async def consumed(bootstrap: str, group: str, topics: Sequence[Topic], timeout: float = DEFAULT_TIMEOUT) -> None:
    """Wait until `group` has handled everything published on `topics` so far (to their true ends)."""
    names = ", ".join(topic.name for topic in topics)
    await eventually(lambda: group_lag(bootstrap, group, topics), f"{group} consumed {names} to its end (last: lag)",
                     timeout=timeout, every=0.2, until=lambda lag: lag == 0)


async def until_polled(predicate: Callable[[], object], consumers: Sequence[AIOKafkaConsumer], what: str,
                       timeout: float = DEFAULT_TIMEOUT) -> None:
    """Poll `consumers` (their group work goes on meanwhile) until `predicate()` holds; nothing is committed."""
    async def polled() -> bool:
        await asyncio.gather(*(consumer.getmany(timeout_ms=100) for consumer in consumers))
        return bool(predicate())
    if not predicate():
        await eventually(polled, what, timeout=timeout)
