"""Live changes of one arena: a Redis pub/sub channel each, published after every commit.

Any replica may serve WatchArena for changes committed by another one.
"""

from __future__ import annotations

import logging
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from arbiter.contracts import arena_pb2 as ap

log = logging.getLogger(__name__)
_CHANNEL = "arena:watch:"
# After these the arena never changes again: the stream ends.
FINAL_CHANGES = frozenset({"finished", "cancelled"})


class Subscription:
    """The changes of one arena from the moment of subscribing, for a bounded time."""

    def __init__(self, pubsub: aioredis.client.PubSub, max_seconds: float) -> None:
        self._pubsub = pubsub
        self._deadline = time.monotonic() + max_seconds

    async def next(self) -> ap.ArenaChange | None:
        """The next change, or None when the time limit is reached."""
        while (left := self._deadline - time.monotonic()) > 0:
            message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=min(left, 1.0))
            if message is None or message.get("type") != "message":
                continue
            change = ap.ArenaChange()
            change.ParseFromString(message["data"])
            return change
        return None

    async def close(self) -> None:
        """Leave the channel."""
        try:
            await self._pubsub.unsubscribe()
        finally:
            await self._pubsub.aclose()


class WatchHub:
    """Publishes and subscribes to ArenaChange messages."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    async def publish(self, arena_id: str, change: str, *, player_id: str = "", game_id: str = "") -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        message = ap.ArenaChange(change=change, player_id=player_id, game_id=game_id)
        message.arena.id = arena_id
        try:
            await self.redis.publish(_CHANNEL + arena_id, message.SerializeToString())
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"arena_id": arena_id, "error": repr(error)})

    async def subscribe(self, arena_id: str, max_seconds: float) -> Subscription:
        """Start listening to one arena's changes (returns once subscribed)."""
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(_CHANNEL + arena_id)
        return Subscription(pubsub, max_seconds)
