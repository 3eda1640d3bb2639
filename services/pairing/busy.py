"""T-18's registry of players in a running game anywhere on the site, in Redis.

Fed by game.started (both players in) and game.finished (both out) of every game, not only
ours, and by the results this service applies itself (a flag or an abandon may arrive before
the play site's game.finished). A game marked over is never added again, so a game.started
that arrives after the game's end cannot leave a player "busy" for ever.

Redis may lose the registry (a restart, a flush, a failover to another server). A marker key
names the server that holds it whole; while the marker is missing or names another server,
`BusyRebuild` replays the registry's window of game.finished, then of game.started, each start
counting for ttl from when it was published, as it did live; then it sets the marker again.
Ends go first so that a start replayed while the rounds go on never shows a player busy in a
game already over: until the replay is done, a player may look free who is not, never the other
way round (a free player wrongly forfeited is the worse error). Round games this service decided
itself (a flag, an abandonment, T-15's close) are looked up in PostgreSQL as their starts are
replayed. The replay goes through scripts like the live events', which stay consumed meanwhile:
their order does not matter. The registry's keys expire, so Redis must not evict keys under
memory pressure (`maxmemory-policy noeviction`), which the marker could not tell.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Iterable, Sequence

import asyncpg
import redis.asyncio as aioredis
from prometheus_client import Counter
from redis.exceptions import RedisError

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import read_window
from arbiter.kit.lease import Leases
from arbiter.kit.pause import pause
from arbiter.kit.settings import KitSettings
from services.pairing import store

log = logging.getLogger(__name__)

_PLAYING = "pairing:playing:"
_OVER = "pairing:over:"
# Names the Redis server (its run_id) that held the whole registry when it was last rebuilt: a
# restart, a flush or a failover to another server leaves it missing or naming another server.
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
# A replayed start: as _START, but each player's set lives until its game's start + ttl (as it
# would have live), or longer if the set already does. KEYS as _START's; ARGV: per game its id
# and the Unix second its start stops counting. A set made here has no ttl yet (-1). A start
# already past counts no more: Redis's clock decides, as it is the one that expires keys.
_REPLAYED_START = """
local now = tonumber(redis.call('TIME')[1])
for i = 1, #KEYS / 3 do
    local game_id = ARGV[2 * i - 1]
    local expire_at = tonumber(ARGV[2 * i])
    if expire_at > now and redis.call('EXISTS', KEYS[3 * i - 2]) == 0 then
        for _, key in ipairs({KEYS[3 * i - 1], KEYS[3 * i]}) do
            redis.call('SADD', key, game_id)
            if redis.call('TTL', key) == -1 then
                redis.call('EXPIREAT', key, expire_at)
            else
                redis.call('EXPIREAT', key, expire_at, 'GT')
            end
        end
    end
end
return 1
"""
# KEYS: the rebuild claim, the marker; ARGV: the claimant, the run_id of the server the claim was
# taken on. Only the claim's holder sets the marker: a claim lost meanwhile (lapsed, or Redis lost
# it too) marks nothing, and a marker naming a server restarted meanwhile is not trusted.
_MARK_WHOLE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('DEL', KEYS[1])
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
# The longest pause between two tries of a failing check or rebuild.
_LONGEST_RETRY_SECONDS = 60.0
# A rebuild's claim is renewed at least this often (and at a third of its lease).
_RENEW_EVERY_SECONDS = 10.0

GameSeats = tuple[str, str, str]  # game id, white id, black id


class BusyRegistry:
    """Who is playing a game right now (T-18)."""

    def __init__(self, redis: aioredis.Redis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl_seconds = ttl_seconds
        self._start = redis.register_script(_START)
        self._finish = redis.register_script(_FINISH)
        self._counts = redis.register_script(_COUNTS)
        self._replayed_start = redis.register_script(_REPLAYED_START)
        self._leases = Leases(redis)
        self._mark_whole = redis.register_script(_MARK_WHOLE)

    async def started(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are playing, unless the game is already over."""
        await self._run(self._start, games)

    async def finished(self, games: Sequence[GameSeats]) -> None:
        """Both players of each game are free of it, now and if its start arrives late."""
        await self._run(self._finish, games)

    async def replayed_starts(self, games: Sequence[tuple[GameSeats, float]]) -> None:
        """As `started`, for (seats, Unix time of the start) replayed: each start counts until then + ttl."""
        for start in range(0, len(games), _GAMES_PER_CALL):
            chunk = games[start:start + _GAMES_PER_CALL]
            keys = [key for (game_id, white, black), _ in chunk
                    for key in (_OVER + game_id, _PLAYING + white, _PLAYING + black)]
            args = [value for (game_id, _, _), at in chunk for value in (game_id, int(at) + self.ttl_seconds)]
            await self._replayed_start(keys=keys, args=args)

    async def whole(self) -> bool:
        """Whether this Redis server has held the whole registry since its last rebuild (nothing lost meanwhile)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(_WHOLE)
            pipe.info("server")
            marker, server = await pipe.execute()
        return marker is not None and marker.decode() == server["run_id"]

    async def claim_rebuild(self, claimant: str, lease_seconds: int) -> str | None:
        """Take the rebuild claim for `claimant` (a lease of `lease_seconds`): the server's run_id, or None if taken."""
        # Taken if free or already the claimant's (a replica whose rebuild failed after its replay takes its
        # own claim again).
        if not await self._leases.hold(_REBUILDING, claimant, lease_seconds * 1000):
            return None
        return str((await self.redis.info("server"))["run_id"])

    async def renew_rebuild(self, claimant: str, lease_seconds: int) -> bool:
        """Extend `claimant`'s claim by `lease_seconds`; False if it holds the claim no more."""
        # Only a claim still held: one that Redis lost meanwhile (a flush) is not taken again, or the rebuild
        # would go on over a registry missing what it replayed before.
        return await self._leases.renew(_REBUILDING, claimant, lease_seconds * 1000)

    async def mark_whole(self, claimant: str, run_id: str) -> bool:
        """Mark the registry whole on the server `run_id` names and drop the claim, if `claimant` still holds it."""
        return bool(await self._mark_whole(keys=[_REBUILDING, _WHOLE], args=[claimant, run_id]))

    async def release_rebuild(self, claimant: str) -> None:
        """Give up the rebuild if `claimant` holds it, so that the next check tries again at once."""
        await self._leases.release(_REBUILDING, claimant)

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
            await script(keys=keys, args=[self.ttl_seconds, *game_ids])  # type: ignore[operator]  # redis-py types a Script as sync or async


class ClaimLost(RuntimeError):
    """The rebuild's claim could not be renewed: it lapsed, another replica took it, or Redis lost it."""


class BusyRebuild:
    """Watches the registry's marker and, when Redis has lost it, replays the game topics into it."""

    def __init__(self, registry: BusyRegistry, pool: asyncpg.Pool, settings: KitSettings, rebuilds: Counter,
                 service: str, *, check_seconds: float, lease_seconds: int,
                 hot_rebuilds: Counter | None = None) -> None:
        self.registry = registry
        self.pool = pool
        self.settings = settings
        self.rebuilds = rebuilds
        # The rebuilds of every service's Redis state in one family (`arbiter_hot_rebuilds_total{what}`).
        self.hot_rebuilds = hot_rebuilds
        self.service = service
        self.check_seconds = check_seconds
        self.lease_seconds = lease_seconds
        # Tells this replica's claim from another's, and from its own before a restart.
        self.claimant = f"{service}:{uuid.uuid4().hex}"

    async def run(self, stop: asyncio.Event) -> None:
        """Check the marker every `check_seconds` and rebuild when it is missing, until `stop` is set."""
        failures = 0
        while not stop.is_set():
            try:
                if not await self.registry.whole():
                    await self.rebuild()
                failures = 0
            except Exception:
                # Whatever failed (Redis, Kafka, PostgreSQL), the service goes on serving (a background
                # task that raises stops it) and tries again, less often while it fails.
                failures += 1
                log.exception("busy registry check or rebuild failed, retrying", extra={"failures": failures})
            await pause(stop, retry_pause(self.check_seconds, failures))

    async def rebuild(self) -> bool:
        """Replay the registry's window of game events into it and mark it whole; False if not done here."""
        run_id = await self.registry.claim_rebuild(self.claimant, self.lease_seconds)
        if run_id is None:
            return False
        started = time.monotonic()
        try:
            if await self.registry.whole():  # another replica finished just before the claim was free
                await self.registry.release_rebuild(self.claimant)
                return False
            replayed = await self._while_claimed(self._replay())
            marked = await self.registry.mark_whole(self.claimant, run_id)
        except ClaimLost:
            log.warning("busy registry rebuild stopped: its claim lapsed, was taken over, or Redis lost it")
            return False
        except BaseException:
            try:
                await asyncio.shield(self.registry.release_rebuild(self.claimant))
            except (OSError, RedisError) as error:  # the claim then lapses with its lease
                log.warning("could not give up the busy registry rebuild", extra={"error": repr(error)})
            raise
        if not marked:
            log.warning("busy registry replayed but not marked whole: the claim was lost meanwhile",
                        extra={"events": replayed})
            return False
        self.rebuilds.labels(self.service).inc()
        if self.hot_rebuilds is not None:
            self.hot_rebuilds.labels(self.service, "busy_registry").inc()
        log.info("busy registry rebuilt", extra={"events": replayed, "seconds": round(time.monotonic() - started, 2)})
        return True

    async def _while_claimed(self, work: Awaitable[int]) -> int:
        """Await `work` while renewing the claim; ClaimLost (and `work` cancelled) as soon as a renewal fails."""
        working = asyncio.ensure_future(work)
        keeping = asyncio.ensure_future(self._keep_claim())
        try:
            await asyncio.wait({working, keeping}, return_when=asyncio.FIRST_COMPLETED)
            if keeping.done():
                keeping.result()  # raises why the claim could not be kept
            return working.result()
        finally:
            for task in (working, keeping):
                task.cancel()
            await asyncio.gather(working, keeping, return_exceptions=True)

    async def _keep_claim(self) -> None:
        # Renewed on a timer, not per batch: a scan of records older than the window passes none on.
        while True:
            await asyncio.sleep(min(self.lease_seconds / 3, _RENEW_EVERY_SECONDS))
            if not await self.registry.renew_rebuild(self.claimant, self.lease_seconds):
                raise ClaimLost()

    async def _replay(self) -> int:
        # Kafka stamps records in real time, and the registry's ttl is real seconds too.
        since_ms = int(time.time() * 1000) - self.registry.ttl_seconds * 1000
        client_id = f"arbiter-{self.service}-busy-rebuild"
        ended = await read_window(self.settings, events.GAME_FINISHED, since_ms, self._finished, client_id=client_id)
        started = await read_window(self.settings, events.GAME_STARTED, since_ms, self._started, client_id=client_id)
        return ended + started

    async def _finished(self, batch: list[tuple[int, ev.GameFinished]]) -> None:
        await self.registry.finished(game_seats(event for _, event in batch))

    async def _started(self, batch: list[tuple[int, ev.GameStarted]]) -> None:
        starts = [(seats, stamp / 1000) for stamp, event in batch for seats in game_seats((event,))]
        if not starts:
            return
        ours = await store.our_games(self.pool, [game_id for (game_id, _, _), _ in starts])
        await self.registry.finished([(row["game_id"], row["white_id"], row["black_id"])
                                      for row in ours.values() if row["finished"]])
        await self.registry.replayed_starts(starts)


def retry_pause(check_seconds: float, failures: int) -> float:
    """Seconds before the next check after `failures` failed ones in a row: doubling, up to a minute."""
    return min(check_seconds * 2 ** min(failures, 16), _LONGEST_RETRY_SECONDS)


def game_seats(games: Iterable[ev.GameStarted | ev.GameFinished]) -> list[GameSeats]:
    """The seats of the games whose two players are named (a casual game may name none)."""
    return [(game.game_id, game.white_id, game.black_id) for game in games if game.white_id and game.black_id]
