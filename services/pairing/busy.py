"""T-18's registry of players in a running game anywhere on the site, in Redis.

Fed by game.started (both players in) and game.finished (both out) of every game, not only
ours, and by the results this service applies itself (a flag or an abandon may arrive before
the play site's game.finished). A game marked over is never added again, so a game.started
that arrives after the game's end cannot leave a player "busy" for ever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import redis.asyncio as aioredis

_PLAYING = "pairing:playing:"
_OVER = "pairing:over:"

# KEYS: over marker, white's set, black's set; ARGV: game id, ttl seconds.
_START = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[2])
return 1
"""
_FINISH = """
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
"""

GameSeats = tuple[str, str, str]  # game id, white id, black id


class BusyRegistry:
    """Who is playing a game right now (T-18)."""

    def __init__(self, redis: aioredis.Redis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl_seconds = ttl_seconds
        self._start = redis.register_script(_START)
        self._finish = redis.register_script(_FINISH)

    async def started(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are playing, unless the game is already over."""
        await self._run(self._start, games)

    async def finished(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are free of it, now and if its start arrives late."""
        await self._run(self._finish, games)

    async def busy(self, players: Iterable[str]) -> set[str]:
        """The players among `players` who are in a running game."""
        players = list(dict.fromkeys(players))
        if not players:
            return set()
        async with self.redis.pipeline(transaction=False) as pipe:
            for player in players:
                pipe.scard(_PLAYING + player)
            counts = await pipe.execute()
        return {player for player, count in zip(players, counts, strict=True) if count}

    async def _run(self, script: object, games: Sequence[GameSeats]) -> None:
        if not games:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for game_id, white, black in games:
                await script(  # type: ignore[operator]
                    keys=[_OVER + game_id, _PLAYING + white, _PLAYING + black],
                    args=[game_id, self.ttl_seconds], client=pipe,
                )
            await pipe.execute()
