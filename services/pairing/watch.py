"""Live changes of one tournament: a Redis pub/sub channel each, published after every commit.

Any replica may serve WatchTournament for changes committed by another one.
"""

from __future__ import annotations

import logging
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from arbiter.contracts import tournament_pb2 as tp

log = logging.getLogger(__name__)
_CHANNEL = "pairing:watch:"
# Changes after which the tournament never changes again: the stream ends.
FINAL_CHANGES = frozenset({"finished", "cancelled"})


class Subscription:
    """The changes of one tournament from the moment of subscribing, for a bounded time."""

    def __init__(self, pubsub: aioredis.client.PubSub, max_seconds: float) -> None:
        self._pubsub = pubsub
        self._deadline = time.monotonic() + max_seconds

    async def next(self) -> tp.TournamentChange | None:
        """The next change, or None when the time limit is reached."""
        while (left := self._deadline - time.monotonic()) > 0:
            message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=min(left, 1.0))
            if message is None or message.get("type") != "message":
                continue
            change = tp.TournamentChange()
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
    """Publishes and subscribes to TournamentChange messages."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    async def publish(self, tournament_id: str, change: str, *, round_number: int = 0,
                      game: tp.GameRecord | None = None) -> None:
        """Announce a committed change; best effort (watchers re-read the state they are sent)."""
        message = tp.TournamentChange(change=change, round=round_number)
        message.tournament.id = tournament_id
        if game is not None:
            message.game.CopyFrom(game)
        try:
            await self.redis.publish(_CHANNEL + tournament_id, message.SerializeToString())
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"tournament_id": tournament_id, "error": repr(error)})

    async def publish_results(self, games: list[tuple[str, tp.GameRecord]]) -> None:
        """Announce many committed results at once, (tournament id, game) each, in one round trip."""
        if not games:
            return
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for tournament_id, game in games:
                    message = tp.TournamentChange(change="result", round=game.round, game=game)
                    message.tournament.id = tournament_id
                    pipe.publish(_CHANNEL + tournament_id, message.SerializeToString())
                await pipe.execute()
        except (RedisError, OSError) as error:
            log.warning("watch publish failed", extra={"results": len(games), "error": repr(error)})

    async def subscribe(self, tournament_id: str, max_seconds: float) -> Subscription:
        """Start listening to one tournament's changes (returns once subscribed)."""
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(_CHANNEL + tournament_id)
        return Subscription(pubsub, max_seconds)
