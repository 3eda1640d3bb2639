"""T-18's registry of players in a running game anywhere on the site, in Redis.

Fed by game.started (both players in) and game.finished (both out) of every game, not only
ours, and by the results this service applies itself (a flag or an abandon may arrive before
the play site's game.finished). A game marked over is never added again, so a game.started
that arrives after the game's end cannot leave a player "busy" for ever.

Redis may lose the registry (a restart without persistence, a flush, a failover). A marker key
says it is whole; while the marker is missing, `BusyRebuild` replays the registry's window of
game.finished, then of game.started, and sets the marker again. Ends go first so that a
start replayed while the rounds go on never shows a player busy in a game already over: until the
replay is done, a player may look free who is not, never the other way round (a free player
wrongly forfeited is the worse error). Round games this service decided itself (a flag, an abandonment,
T-15's close) are looked up in PostgreSQL as their starts are replayed. The replay goes through
the same scripts as live events, which stay consumed meanwhile: their order does not matter.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable, Sequence

import asyncpg
import redis.asyncio as aioredis
from aiokafka.errors import KafkaError
from prometheus_client import Counter
from redis.exceptions import RedisError

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import read_window
from arbiter.kit.pause import pause
from arbiter.kit.settings import KitSettings
from services.pairing import store

log = logging.getLogger(__name__)

_PLAYING = "pairing:playing:"
_OVER = "pairing:over:"
# Set once the registry holds every game of its window; Redis losing its data loses it too.
# Both keys share the {busy} hash tag: one script changes the two (Redis Cluster, deploy/k8s/README.md).
_WHOLE = "pairing:{busy}:whole"
# Held by the replica rebuilding the registry, so that replicas do not all replay the topics.
_REBUILDING = "pairing:{busy}:rebuilding"

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
# KEYS: the rebuild claim, the marker; ARGV: the claimant. The marker is set only by the claim's holder.
_MARK_WHOLE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1
"""
# KEYS: the rebuild claim; ARGV: the claimant, who gives it up after a failed rebuild.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
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
        self._mark_whole = redis.register_script(_MARK_WHOLE)
        self._release = redis.register_script(_RELEASE)

    async def started(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are playing, unless the game is already over."""
        await self._run(self._start, games)

    async def finished(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are free of it, now and if its start arrives late."""
        await self._run(self._finish, games)

    async def whole(self) -> bool:
        """Whether the registry is known to hold every game of its window (no data lost since its last rebuild)."""
        return bool(await self.redis.exists(_WHOLE))

    async def claim_rebuild(self, claimant: str, lease_seconds: int) -> bool:
        """Take the rebuild for `claimant` unless another holds it; the claim lapses after `lease_seconds`."""
        return bool(await self.redis.set(_REBUILDING, claimant, nx=True, ex=lease_seconds))

    async def mark_whole(self, claimant: str) -> bool:
        """Set the marker and drop the claim, if `claimant` still holds it (else a later rebuild is under way)."""
        return bool(await self._mark_whole(keys=[_REBUILDING, _WHOLE], args=[claimant]))  # type: ignore[misc]

    async def release_rebuild(self, claimant: str) -> None:
        """Give up the rebuild if `claimant` holds it, so that the next check tries again at once."""
        await self._release(keys=[_REBUILDING], args=[claimant])  # type: ignore[misc]

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


class BusyRebuild:
    """Watches the registry's marker and, when Redis has lost it, replays the game topics into it."""

    def __init__(self, registry: BusyRegistry, pool: asyncpg.Pool, settings: KitSettings, rebuilds: Counter,
                 service: str, *, check_seconds: float, lease_seconds: int) -> None:
        self.registry = registry
        self.pool = pool
        self.settings = settings
        self.rebuilds = rebuilds
        self.service = service
        self.check_seconds = check_seconds
        self.lease_seconds = lease_seconds
        # Tells this replica's claim from another's, and from its own before a restart.
        self.claimant = f"{service}:{uuid.uuid4().hex}"

    async def run(self, stop: asyncio.Event) -> None:
        """Check the marker every `check_seconds` and rebuild when it is missing, until `stop` is set."""
        while not stop.is_set():
            try:
                if not await self.registry.whole():
                    await self.rebuild()
            except (OSError, RedisError, KafkaError, asyncpg.PostgresError, TimeoutError) as error:
                log.warning("busy registry check or rebuild failed, retrying", extra={"error": repr(error)})
            await pause(stop, self.check_seconds)

    async def rebuild(self) -> bool:
        """Replay the registry's window of game events into it and mark it whole; False if another replica is on it."""
        if not await self.registry.claim_rebuild(self.claimant, self.lease_seconds):
            return False
        started = time.monotonic()
        try:
            replayed = await self._replay()
        except BaseException:
            try:
                await asyncio.shield(self.registry.release_rebuild(self.claimant))
            except (OSError, RedisError) as error:  # the claim then lapses with its lease
                log.warning("could not give up the busy registry rebuild", extra={"error": repr(error)})
            raise
        marked = await self.registry.mark_whole(self.claimant)
        self.rebuilds.labels(self.service).inc()
        log.info("busy registry rebuilt", extra={"events": replayed, "seconds": round(time.monotonic() - started, 2),
                                                 "marked_whole": marked})
        return True

    async def _replay(self) -> int:
        # Kafka stamps records in real time, and the registry's ttl is real seconds too.
        until_ms = int(time.time() * 1000)
        since_ms = until_ms - self.registry.ttl_seconds * 1000
        client_id = f"arbiter-{self.service}-busy-rebuild"
        ended = await read_window(self.settings, events.GAME_FINISHED, since_ms, until_ms,
                                  self._finished, client_id=client_id)  # type: ignore[arg-type]
        started = await read_window(self.settings, events.GAME_STARTED, since_ms, until_ms,
                                    self._started, client_id=client_id)  # type: ignore[arg-type]
        return ended + started

    async def _finished(self, batch: list[ev.GameFinished]) -> None:
        await self.registry.finished([(e.game_id, e.white_id, e.black_id) for e in batch if e.white_id and e.black_id])

    async def _started(self, batch: list[ev.GameStarted]) -> None:
        seats = [(e.game_id, e.white_id, e.black_id) for e in batch if e.white_id and e.black_id]
        if not seats:
            return
        decided_here = [row for row in (await store.our_games(self.pool, [g for g, _, _ in seats])).values()
                        if row["finished"]]
        await self.registry.finished([(row["game_id"], row["white_id"], row["black_id"]) for row in decided_here])
        await self.registry.started(seats)
