"""Live changes of one aggregate (an arena, a tournament): a Redis pub/sub channel each, published after commit.

Any replica may serve a Watch stream for changes committed by another one. Each stream has its own
reader, which drains its channel into a bounded queue: a stream whose client reads more slowly than
changes arrive is dropped with RESOURCE_EXHAUSTED instead of growing memory here or in Redis
(its client watches again and gets a fresh snapshot).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterable
from typing import Final, Generic, TypeVar

import redis.asyncio as aioredis
from google.protobuf.message import Message
from redis.exceptions import RedisError

from arbiter.kit.errors import ResourceExhausted
from arbiter.kit.settings import DEFAULT_WATCH_MAX_QUEUED, DEFAULT_WATCH_MAX_WATCHERS

log = logging.getLogger(__name__)
# After these the aggregate never changes again: the stream ends.
FINAL_CHANGES = frozenset({"finished", "cancelled"})

MessageT = TypeVar("MessageT", bound=Message)
# ARGV: channel, message, channel, message... One command instead of a pipeline of PUBLISH: redis-py
# packs and parses each pipelined command apart, which made announcing results about a twentieth
# of the pairing service's CPU under load (py-spy, 500 results/s).
_PUBLISH_ALL: Final = """
for i = 1, #ARGV, 2 do redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end
return 1
"""
# Messages per script call: a call blocks Redis while it runs, so a huge batch is cut in slices.
_MESSAGES_PER_CALL: Final = 500


class Subscription(Generic[MessageT]):
    """The changes of one aggregate from the moment of subscribing, for a bounded time."""

    def __init__(self, hub: WatchHub[MessageT], key: str, pubsub: aioredis.client.PubSub,
                 max_seconds: float) -> None:
        self._hub = hub
        self._key = key
        self._pubsub = pubsub
        self._deadline = time.monotonic() + max_seconds
        self._pending: deque[MessageT] = deque()
        self._ready = asyncio.Event()
        self._failure: BaseException | None = None
        self._closed = False
        self._subscribed = True
        self._reader = asyncio.create_task(self._read(), name=f"watch {hub.channel_prefix}{key}")

    @property
    def dropped(self) -> bool:
        """Whether the stream has ended with an error (too far behind, or Redis failed)."""
        return self._failure is not None

    async def next(self) -> MessageT | None:
        """The next change, or None when the time limit is reached; raises once the stream was dropped."""
        while (left := self._deadline - time.monotonic()) > 0:
            if self._failure is not None:
                raise self._failure
            if self._pending:
                return self._pending.popleft()
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout=left)
        return None

    async def close(self) -> None:
        """Stop reading and leave the channel; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._hub._release(self._key)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._leave()

    async def _read(self) -> None:
        message_type = self._hub.message_type
        try:
            while True:
                message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                if message is None or message.get("type") != "message":
                    continue
                if len(self._pending) >= self._hub.max_queued:
                    self._drop(ResourceExhausted(
                        f"the watch of {self._hub.noun} {self._key} fell more than {self._hub.max_queued} changes "
                        f"behind its client and was stopped; watch again for a fresh snapshot"
                    ))
                    # Leaving at once stops Redis buffering for a client that is not reading.
                    await self._leave()
                    return
                change = message_type()
                change.ParseFromString(message["data"])
                self._pending.append(change)
                self._ready.set()
        except Exception as error:  # handed to the stream, whose next() raises it for the caller to report
            self._drop(error)

    def _drop(self, error: BaseException) -> None:
        self._failure = error
        self._pending.clear()
        self._ready.set()

    async def _leave(self) -> None:
        if not self._subscribed:
            return
        self._subscribed = False
        try:
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.unsubscribe()
        finally:
            await self._pubsub.aclose()


class WatchHub(Generic[MessageT]):
    """Publishes and subscribes to one kind of change message, a channel per aggregate.

    A service subclasses it naming `channel_prefix`, `message_type` and `noun` (how people call an
    aggregate: "arena", "tournament"), and adds a `publish` that builds its own change messages.
    """

    channel_prefix: str
    message_type: type[MessageT]
    noun: str

    def __init__(self, redis: aioredis.Redis, *, max_queued: int = DEFAULT_WATCH_MAX_QUEUED,
                 max_watchers: int = DEFAULT_WATCH_MAX_WATCHERS) -> None:
        if max_queued < 1 or max_watchers < 1:
            raise ValueError(f"watch limits must be at least 1, not max_queued={max_queued}, "
                             f"max_watchers={max_watchers}")
        self.redis = redis
        self.max_queued = max_queued
        self.max_watchers = max_watchers
        self._watchers: dict[str, int] = {}
        self._publish_all = redis.register_script(_PUBLISH_ALL)

    async def publish_message(self, key: str, message: MessageT) -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        try:
            await self.redis.publish(self.channel_prefix + key, message.SerializeToString())
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={f"{self.noun}_id": key, "error": repr(error)})

    async def publish_messages(self, messages: Iterable[tuple[str, MessageT]]) -> None:
        """Announce many committed changes, (aggregate id, message) each, in one script call; best effort."""
        args = [part for key, message in messages
                for part in (self.channel_prefix + key, message.SerializeToString())]
        per_call = 2 * _MESSAGES_PER_CALL
        try:
            for start in range(0, len(args), per_call):
                await self._publish_all(args=args[start:start + per_call])
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"changes": len(args) // 2, "error": repr(error)})

    async def subscribe(self, key: str, max_seconds: float) -> Subscription[MessageT]:
        """Start listening to one aggregate's changes (returns once subscribed)."""
        watchers = self._watchers.get(key, 0)
        if watchers >= self.max_watchers:
            raise ResourceExhausted(
                f"{self.noun} {key} has as many live watches as one replica serves ({watchers}); try again later"
            )
        # Counted before the first await, so that concurrent calls cannot all pass the bound.
        self._watchers[key] = watchers + 1
        pubsub = self.redis.pubsub()
        try:
            await pubsub.subscribe(self.channel_prefix + key)
        except BaseException:
            self._release(key)
            await pubsub.aclose()
            raise
        return Subscription(self, key, pubsub, max_seconds)

    def watchers(self, key: str) -> int:
        """Live watches of one aggregate on this replica."""
        return self._watchers.get(key, 0)

    def _release(self, key: str) -> None:
        remaining = self._watchers.get(key, 0) - 1
        if remaining > 0:
            self._watchers[key] = remaining
        else:
            self._watchers.pop(key, None)
