"""The arena's hot structures in Redis: queue, cooldowns, leaderboard, records, colours (AR-2..AR-6).

Every key of one arena carries the arena id as its hash tag (`arena:{a_1}:queue`), so all
of them live in one Redis Cluster slot and the scripts below may touch them together.
Nothing here is the system of record: `load` rewrites an arena from what PostgreSQL says
(see `services.arena.rebuild`), and the marker key tells whether that is needed.

Layout, per arena A:
  arena:{A}:ready        marker: the keys below are complete
  arena:{A}:queue        ZSET player -> scaled instant they started waiting (AR-2)
  arena:{A}:board        ZSET player -> leaderboard_score(points, wins) (AR-6)
  arena:{A}:rec          HASH player -> "points,wins,draws,losses,streak" (AR-4, AR-5)
  arena:{A}:colours      HASH player -> "balance,last" (whites minus blacks, "w"/"b"/"")
  arena:{A}:playing      SET  players in a running game of this arena
  arena:{A}:cool:<p>     ZSET opponent -> scaled instant p and opponent may meet again (AR-3)
  arena:{A}:owner        the pairing lease (not rebuilt: whoever takes it owns the arena)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import cast

import redis.asyncio as aioredis

from arbiter.competition.arena import ArenaPlayerRecord, leaderboard_score
from arbiter.kit.lease import Leases
from arbiter.vocabulary import Side

# KEYS: queue, board, rec, colours, ready; ARGV: now (scaled unix seconds), cooldown key prefix.
# Ranks are those of `arbiter.competition.arena.rank_records`, AR-6's one specification (1 + strictly
# better scores); tests/integration/arena/test_leaderboard_ranks.py holds both ways of counting to it.
# One line per waiting player: id, waiting since, rank, colours,
# record, opponents still in cooldown (comma separated), fields split by \x1f and lines by
# \x1e: one bulk string parses far faster than thousands of nested replies. Nil when the
# arena's keys are not built. Bulk commands (ranks from one walk down the board when many
# wait, HMGET per chunk) keep a burst of thousands to a few hundred calls plus one per player.
_SNAPSHOT = """
if redis.call('EXISTS', KEYS[5]) == 0 then return false end
local q = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local n = #q / 2
if n == 0 then return '' end
local size = redis.call('ZCARD', KEYS[2])
local ranks = {}
if n * 16 >= size then
  local board = redis.call('ZREVRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local rank, previous = 0, nil
  for i = 1, #board, 2 do
    if board[i + 1] ~= previous then rank = (i + 1) / 2; previous = board[i + 1] end
    ranks[board[i]] = rank
  end
else
  for i = 1, #q, 2 do
    local score = redis.call('ZSCORE', KEYS[2], q[i])
    if score then ranks[q[i]] = redis.call('ZCOUNT', KEYS[2], '(' .. score, '+inf') + 1 end
  end
end
local out = {}
for first = 1, n, 500 do
  local last = math.min(n, first + 499)
  local ids = {}
  for i = first, last do ids[#ids + 1] = q[2 * i - 1] end
  local colours = redis.call('HMGET', KEYS[4], unpack(ids))
  local recs = redis.call('HMGET', KEYS[3], unpack(ids))
  for j = 1, #ids do
    local p = ids[j]
    local blocked = redis.call('ZRANGEBYSCORE', ARGV[2] .. p, '(' .. ARGV[1], '+inf')
    -- One concatenation, no table per player.
    out[#out + 1] = p .. '\\31' .. q[2 * (first + j - 1)] .. '\\31' .. (ranks[p] or (size + 1)) .. '\\31'
      .. (colours[j] or '') .. '\\31' .. (recs[j] or '') .. '\\31' .. table.concat(blocked, ',')
  end
end
return table.concat(out, '\\30')
"""
# KEYS: queue, playing, colours; ARGV[1]: lines "player\x1fwaiting-since as read\x1fnew colours"
# joined by \x1e (one argument encodes far faster than thousands).
# A player leaves the queue only if they still wait since the instant the pass read: a
# player who left and came back meanwhile is a new arrival, not the one just paired.
# Bulk commands per chunk of 500 (ZMSCORE, ZREM, SADD, HSET): a burst of thousands costs
# a few dozen calls.
_TAKE = """
local players, seen, colours = {}, {}, {}
local n = 0
for p, since, c in string.gmatch(ARGV[1], '([^\\30\\31]*)\\31([^\\30\\31]*)\\31([^\\30]*)') do
  n = n + 1
  players[n] = p
  seen[n] = tonumber(since)
  colours[n] = c
end
local taken = 0
for first = 1, #players, 500 do
  local last = math.min(#players, first + 499)
  local scores = redis.call('ZMSCORE', KEYS[1], unpack(players, first, last))
  local gone, fields = {}, {}
  for i = first, last do
    local since = scores[i - first + 1]
    if since and tonumber(since) == seen[i] then gone[#gone + 1] = players[i] end
    fields[#fields + 1] = players[i]
    fields[#fields + 1] = colours[i]
  end
  if #gone > 0 then taken = taken + redis.call('ZREM', KEYS[1], unpack(gone)) end
  redis.call('SADD', KEYS[2], unpack(players, first, last))
  redis.call('HSET', KEYS[3], unpack(fields))
end
return taken
"""
# KEYS: board, rec, playing, queue, ready; ARGV: cooldown key prefix, now, then three packed
# lists (\x1e between items, \x1f between fields): players "id, board score, record", pairs
# "a, b, next allowed instant", requeued players "id, waiting since" (added only if absent).
# Returns 0 and changes nothing when the arena's keys are not built (the caller rebuilds).
_SCORED = """
if redis.call('EXISTS', KEYS[5]) == 0 then return 0 end
for line in string.gmatch(ARGV[3], '[^\\30]+') do
  local p, score, rec = string.match(line, '^([^\\31]*)\\31([^\\31]*)\\31(.*)$')
  redis.call('ZADD', KEYS[1], score, p)
  redis.call('HSET', KEYS[2], p, rec)
  redis.call('SREM', KEYS[3], p)
  redis.call('ZREMRANGEBYSCORE', ARGV[1] .. p, '-inf', ARGV[2])
end
for line in string.gmatch(ARGV[4], '[^\\30]+') do
  local a, b, untl = string.match(line, '^([^\\31]*)\\31([^\\31]*)\\31(.*)$')
  redis.call('ZADD', ARGV[1] .. a, untl, b)
  redis.call('ZADD', ARGV[1] .. b, untl, a)
end
for line in string.gmatch(ARGV[5], '[^\\30]+') do
  local p, since = string.match(line, '^([^\\31]*)\\31(.*)$')
  redis.call('ZADD', KEYS[4], 'NX', since, p)
end
return 1
"""


def _prefix(arena_id: str) -> str:
    return f"arena:{{{arena_id}}}:"


def encode_record(record: ArenaPlayerRecord) -> str:
    """The record as stored in the `rec` hash."""
    return f"{record.points},{record.wins},{record.draws},{record.losses},{record.streak}"


def decode_record(raw: bytes | str | None) -> ArenaPlayerRecord:
    """A stored record; a missing one is a player without a finished game."""
    if not raw:
        return ArenaPlayerRecord()
    text = raw.decode() if isinstance(raw, bytes) else raw
    points, wins, draws, losses, streak = (int(part) for part in text.split(","))
    return ArenaPlayerRecord(points, wins, draws, losses, streak)


@dataclass(frozen=True, slots=True)
class Colours:
    """Whites minus blacks in this arena, and the colour of the last game."""

    balance: int = 0
    last: Side | None = None

    def after(self, side: Side) -> Colours:
        """The colours after one more game with `side`."""
        return Colours(self.balance + (1 if side is Side.WHITE else -1), side)

    def encode(self) -> str:
        """As stored in the `colours` hash."""
        last = "" if self.last is None else ("w" if self.last is Side.WHITE else "b")
        return f"{self.balance},{last}"

    @staticmethod
    def decode(raw: bytes | str | None) -> Colours:
        """A stored value; missing means no game yet."""
        if not raw:
            return Colours()
        text = raw.decode() if isinstance(raw, bytes) else raw
        balance, last = text.split(",")
        return Colours(int(balance), {"w": Side.WHITE, "b": Side.BLACK}.get(last))


# Not frozen: a burst builds thousands, and a frozen dataclass's __init__ costs several times more.
@dataclass(slots=True)
class Waiting:
    """One waiting player as the pairing pass reads them (read only)."""

    player_id: str
    since: float
    rank: int
    colours: Colours
    record: ArenaPlayerRecord
    blocked: frozenset[str]


@dataclass(frozen=True, slots=True)
class HotArena:
    """Everything Redis holds for one arena, as computed from PostgreSQL by the rebuild."""

    records: Mapping[str, ArenaPlayerRecord]
    colours: Mapping[str, Colours]
    playing: frozenset[str]
    waiting: Mapping[str, float]
    # player -> opponent -> scaled instant they may meet again (only those still in the future).
    cooldowns: Mapping[str, Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class BoardRow:
    """One leaderboard line as Redis holds it; `rank` is shared by equal scores (AR-6)."""

    rank: int
    player_id: str
    record: ArenaPlayerRecord
    playing: bool


class HotStore:
    """Reads and writes one arena's Redis keys."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._snapshot = redis.register_script(_SNAPSHOT)
        self._take = redis.register_script(_TAKE)
        self._scored = redis.register_script(_SCORED)
        self._leases = Leases(redis)

    @staticmethod
    def key(arena_id: str, name: str) -> str:
        """The key `name` of arena `arena_id` (all under the arena's hash tag)."""
        return _prefix(arena_id) + name

    async def is_ready(self, arena_id: str) -> bool:
        """Are the arena's keys complete (the marker is set by `load` only)?"""
        return bool(await self.redis.exists(self.key(arena_id, "ready")))

    async def invalidate(self, arena_id: str) -> None:
        """Drop the marker: the next reader rebuilds the arena's keys from PostgreSQL."""
        await self.redis.delete(self.key(arena_id, "ready"))

    async def load(self, arena_id: str, hot: HotArena, known_players: Iterable[str]) -> None:
        """Replace the arena's keys by `hot`, atomically, and set the marker last."""
        k = partial(self.key, arena_id)
        players = set(known_players) | set(hot.records) | set(hot.cooldowns)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(k("ready"), k("queue"), k("board"), k("rec"), k("colours"), k("playing"),
                        *(k(f"cool:{p}") for p in players))
            if hot.records:
                pipe.zadd(k("board"), {p: leaderboard_score(r.points, r.wins) for p, r in hot.records.items()})
                pipe.hset(k("rec"), mapping={p: encode_record(r) for p, r in hot.records.items()})
            if hot.colours:
                pipe.hset(k("colours"), mapping={p: c.encode() for p, c in hot.colours.items()})
            if hot.playing:
                pipe.sadd(k("playing"), *hot.playing)
            if hot.waiting:
                pipe.zadd(k("queue"), dict(hot.waiting))
            for player, opponents in hot.cooldowns.items():
                if opponents:
                    pipe.zadd(k(f"cool:{player}"), dict(opponents))
            pipe.set(k("ready"), "1")
            await pipe.execute()

    # -- entering and leaving the queue ------------------------------------------------------

    async def join(self, arena_id: str, player_id: str, record: ArenaPlayerRecord, queue_at: float | None) -> None:
        """Put a (re)joining player on the board and, when they may play now, in the queue (AR-2)."""
        k = partial(self.key, arena_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(k("board"), {player_id: leaderboard_score(record.points, record.wins)})
            pipe.hset(k("rec"), player_id, encode_record(record))
            if queue_at is not None:
                pipe.zadd(k("queue"), {player_id: queue_at}, nx=True)
            await pipe.execute()

    async def leave(self, arena_id: str, player_id: str) -> None:
        """Take a player out of the queue (they stay on the board with their points)."""
        await self.redis.zrem(self.key(arena_id, "queue"), player_id)

    async def clear_queue(self, arena_id: str) -> None:
        """Nobody waits any more: the arena's end was reached (AR-1)."""
        await self.redis.delete(self.key(arena_id, "queue"))

    async def waiting_count(self, arena_id: str) -> int:
        """How many players wait."""
        return int(await self.redis.zcard(self.key(arena_id, "queue")))

    # -- the pairing pass --------------------------------------------------------------------

    async def snapshot(self, arena_id: str, now: float) -> list[Waiting] | None:
        """Every waiting player with rank, colours, record and cooldowns; None if the keys are missing."""
        k = partial(self.key, arena_id)
        rows = await self._snapshot(
            keys=[k("queue"), k("board"), k("rec"), k("colours"), k("ready")], args=[repr(now), k("cool:")]
        )
        if rows is None:
            return None
        waiting: list[Waiting] = []
        # Few distinct instants, ranks, colours and records recur across thousands of players:
        # decode each once.
        instants: dict[str, float] = {}
        ranks: dict[str, int] = {}
        colour_values: dict[str, Colours] = {}
        record_values: dict[str, ArenaPlayerRecord] = {}
        nobody: frozenset[str] = frozenset()
        append = waiting.append
        for line in rows.decode().split("\x1e") if rows else ():
            player, since, rank, colours, record, blocked = line.split("\x1f")
            instant = instants.get(since)
            if instant is None:
                instant = instants[since] = float(since)
            place = ranks.get(rank)
            if place is None:
                place = ranks[rank] = int(rank)
            colour = colour_values.get(colours)
            if colour is None:
                colour = colour_values[colours] = Colours.decode(colours)
            stored = record_values.get(record)
            if stored is None:
                stored = record_values[record] = decode_record(record)
            cut_off = frozenset(blocked.split(",")) if blocked else nobody
            append(Waiting(player, instant, place, colour, stored, cut_off))
        return waiting

    async def take(self, arena_id: str, paired: Sequence[tuple[str, float, Colours]]) -> int:
        """Paired players leave the queue, count as playing and get their new colours."""
        if not paired:
            return 0
        # Few distinct instants and colours recur across a burst's thousands: encode each once
        # (colours by identity: the pass shares one object per value, and hashing one costs more).
        instants: dict[float, str] = {}
        encoded: dict[int, str] = {}
        lines = []
        for player, since, colours in paired:
            instant = instants.get(since)
            if instant is None:
                instant = instants[since] = repr(since)
            value = encoded.get(id(colours))
            if value is None:
                value = encoded[id(colours)] = colours.encode()
            lines.append(f"{player}\x1f{instant}\x1f{value}")
        packed = "\x1e".join(lines)
        k = partial(self.key, arena_id)
        return int(await self._take(keys=[k("queue"), k("playing"), k("colours")], args=[packed]))

    # -- a finished game ---------------------------------------------------------------------

    async def scored_many(
        self, arena_id: str,
        games: Sequence[tuple[Mapping[str, ArenaPlayerRecord], tuple[str, str, float] | None, Mapping[str, float]]],
        now: float,
    ) -> bool:
        """For each finished game: the players' records and board scores, the pair's cooldown, the requeue.

        One script call for all of them (AR-2..AR-6); the values are absolute, so applying
        them again (a redelivered result) changes nothing. False, and nothing written, when the
        arena's keys are not built (a flush): the caller rebuilds them from PostgreSQL.
        """
        players: list[str] = []
        cooldowns: list[str] = []
        requeue: list[str] = []
        for records, cooldown, waiting in games:
            for player, record in records.items():
                score = leaderboard_score(record.points, record.wins)
                players.append(f"{player}\x1f{score}\x1f{encode_record(record)}")
            if cooldown is not None:
                cooldowns.append(f"{cooldown[0]}\x1f{cooldown[1]}\x1f{cooldown[2]!r}")
            requeue.extend(f"{player}\x1f{since!r}" for player, since in waiting.items())
        k = partial(self.key, arena_id)
        return bool(await self._scored(
            keys=[k("board"), k("rec"), k("playing"), k("queue"), k("ready")],
            args=[k("cool:"), repr(now), "\x1e".join(players), "\x1e".join(cooldowns), "\x1e".join(requeue)],
        ))

    # -- the leaderboard ---------------------------------------------------------------------

    async def board_size(self, arena_id: str) -> int:
        """How many players are on the leaderboard."""
        return int(await self.redis.zcard(self.key(arena_id, "board")))

    async def position(self, arena_id: str, player_id: str) -> int | None:
        """0-based position of a player in the board's order, or None if not on it."""
        value = await self.redis.zrevrank(self.key(arena_id, "board"), player_id)
        return value if isinstance(value, int) else None

    async def board_page(self, arena_id: str, offset: int, size: int) -> list[BoardRow]:
        """`size` rows from position `offset` (best first), each with its shared rank (AR-6)."""
        k = partial(self.key, arena_id)
        # (redis-py types the reply of every form of the command; with scores it is these pairs.)
        entries = cast("list[tuple[bytes, float]]",
                       await self.redis.zrevrange(k("board"), offset, offset + size - 1, withscores=True))
        if not entries:
            return []
        players = [member.decode() for member, _ in entries]
        async with self.redis.pipeline(transaction=False) as pipe:
            for _, score in entries:
                pipe.zcount(k("board"), f"({int(score)}", "+inf")
            pipe.hmget(k("rec"), players)
            pipe.smismember(k("playing"), players)
            replies = await pipe.execute()
        ranks, raw_records, playing = replies[:-2], replies[-2], replies[-1]
        return [
            BoardRow(int(rank) + 1, player, decode_record(raw), bool(flag))
            for player, rank, raw, flag in zip(players, ranks, raw_records, playing, strict=True)
        ]

    # -- ownership ---------------------------------------------------------------------------

    async def hold_lease(self, arena_id: str, replica: str, lease_ms: int) -> bool:
        """Take or renew this replica's lease on pairing the arena; False if another holds it."""
        return await self._leases.hold(self.key(arena_id, "owner"), replica, lease_ms)

    async def release_lease(self, arena_id: str, replica: str) -> None:
        """Give the lease back (on shutdown), so another replica takes over at once."""
        await self._leases.release(self.key(arena_id, "owner"), replica)
