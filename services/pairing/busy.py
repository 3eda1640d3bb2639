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

# One script call per batch, not per game: redis-py packs each call at a cost that made this
# registry over a quarter of the result consumer's time (py-spy, 1,000 results/s).
# KEYS: per game its over marker, white's set and black's set; ARGV: the ttl in seconds, then
# the game ids in the same order.
_START = """
local ttl = ARGV[1]
for i = 1, #ARGV - 1 do
    local game_id = ARGV[i + 1]
    if redis.call('EXISTS', KEYS[3 * i - 2]) == 0 then
        redis.call('SADD', KEYS[3 * i - 1], game_id)
        redis.call('EXPIRE', KEYS[3 * i - 1], ttl)
        redis.call('SADD', KEYS[3 * i], game_id)
        redis.call('EXPIRE', KEYS[3 * i], ttl)
    end
end
return 1
"""
_FINISH = """
local ttl = ARGV[1]
for i = 1, #ARGV - 1 do
    local game_id = ARGV[i + 1]
    redis.call('SET', KEYS[3 * i - 2], '1', 'EX', ttl)
    redis.call('SREM', KEYS[3 * i - 1], game_id)
    redis.call('SREM', KEYS[3 * i], game_id)
end
return 1
"""
# KEYS: the players' sets; returns how many games each is in (one command instead of one per player).
_COUNTS = """
local counts = {}
for i, key in ipairs(KEYS) do counts[i] = redis.call('SCARD', key) end
return counts
"""
# Games per script call: a call blocks Redis while it runs, so a huge batch is cut in slices.
_GAMES_PER_CALL = 500

GameSeats = tuple[str, str, str]  # game id, white id, black id


class BusyRegistry:
    """Who is playing a game right now (T-18)."""

    def __init__(self, redis: aioredis.Redis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl_seconds = ttl_seconds
        self._start = redis.register_script(_START)
        self._finish = redis.register_script(_FINISH)
        self._counts = redis.register_script(_COUNTS)

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
        counts = await self._counts(keys=[_PLAYING + player for player in players])
        return {player for player, count in zip(players, counts, strict=True) if count}

    async def _run(self, script: object, games: Sequence[GameSeats]) -> None:
        for start in range(0, len(games), _GAMES_PER_CALL):
            chunk = games[start:start + _GAMES_PER_CALL]
            keys = [key for game_id, white, black in chunk
                    for key in (_OVER + game_id, _PLAYING + white, _PLAYING + black)]
            game_ids = [game_id for game_id, _, _ in chunk]
            await script(keys=keys, args=[self.ttl_seconds, *game_ids])  # type: ignore[operator]
