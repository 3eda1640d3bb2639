"""Redis: one string per game, the deadline sorted set, and the flag claims of the poller.

Every write of a game is a compare-and-set on the version at the head of its string (a Lua
script), so the move consumer, the presence and boost consumers, the flag poller and gRPC
calls (possibly in different replicas) never overwrite each other: the loser of a race reloads
and retries. The same script keeps the game's next deadline in `<prefix>:deadlines` (score =
competition ms), so the record and its deadline never disagree. A batch of moves or of game
events writes its games with one script call, and reads (with their parked moves, one script
call) only those this process did not save last (`take_known`: the compare-and-set of the write
checks the others).

Every write that sets a deadline tells the earliest one to a watcher in the same process (its
flag poller, which wakes for it instead of polling the set blindly at a short interval).

Flag claims: `claim` moves due games from `deadlines` to `inflight` with a lease in one
script, so of two replicas exactly one takes a game; a replica killed before saving the flag
leaves the game in `inflight`, and after the lease another replica (or the restarted one)
takes it again.

Keys of one game are not co-located for Redis Cluster: the service expects one Redis (or one
shard for all clock keys).

A Redis loss (killed and restarted empty, flushed, a failover) at any moment loses nothing that
was consumed. Every record saved here is also copied to PostgreSQL (`store.LiveCopies`): not at
every move but once per handled batch, in one statement, before the handler returns and Kafka's
offsets are committed, so the copy is never behind what was consumed. Redis holds an epoch
(`epoch_key`) that every write script checks: a Redis that lost it takes no write, the writer
rebuilds it first (`rebuild.HotRebuild`: every game not over, its parked moves and its deadline,
and the Triple Block mirror) and its batch then reads the records again; a batch written to the
lost Redis finds the epoch moved on when it copies to PostgreSQL and is handled again from Kafka.
The flag poller's claim checks the epoch too, so a loss is seen within a poll even with no event.
`tests/bench/bench_clock_service.py` measures what the copy costs the move path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import NamedTuple

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from arbiter.kit.errors import RetryLater
from services.clock.clocked_game import (
    ClockedGame,
    GameMeta,
    Kind,
    Restore,
    Status,
    decode_value,
    encode_body,
    encode_early,
    game_deadline_ms,
)


class HotStateLost(RedisError, RetryLater):
    """Redis lost what this process wrote (killed, flushed or rebuilt since): the work is done again."""


class LiveRow(NamedTuple):
    """One saved live record for PostgreSQL's copy, with the epoch of the Redis it was written to."""

    game_id: str
    version: int
    status: str
    body: str
    early: str
    # Real ms Redis keeps it (a finished game, a game never started); None: no expiry.
    ttl_ms: int | None
    epoch: str

_HEADER = """
local function header(value)
  if not value then return '', '-1' end
  local version, row = string.match(value, '^(%d*);(%-?%d*)')
  return version, row
end
"""

# KEYS: deadlines, epoch, then per game: its string, its early-move hash. ARGV[1]: ttl ms of parked
# moves, ARGV[2]: the epoch the writer knows; then per game: "expected version|deadline ('' = none)|
# ttl ms ('' = keep)|n|m|member", the body, n (ply, move) pairs to park, m plies to drop. Returns 1
# (saved) or 0 (lost) per game, or -1 and writes nothing when the epoch is not the writer's.
_SAVE = _HEADER + """
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
local out = {}
local a = 3
for g = 1, (#KEYS - 2) / 2 do
  local main, early = KEYS[2 * g + 1], KEYS[2 * g + 2]
  local expected, deadline, ttl, parked, dropped, member =
    string.match(ARGV[a], '^(%d*)|(%d*)|(%d*)|(%d+)|(%d+)|(.*)$')
  parked, dropped = tonumber(parked), tonumber(dropped)
  local body = ARGV[a + 1]
  local first_park = a + 2
  local first_drop = first_park + 2 * parked
  a = first_drop + dropped
  local version, row = header(redis.call('GET', main))
  if version ~= expected then
    out[g] = 0
  else
    local value = tostring((tonumber(version) or 0) + 1) .. ';' .. row .. body
    if ttl == '' then redis.call('SET', main, value) else redis.call('SET', main, value, 'PX', ttl) end
    for i = first_park, first_drop - 1, 2 do redis.call('HSET', early, ARGV[i], ARGV[i + 1]) end
    if parked > 0 then redis.call('PEXPIRE', early, ARGV[1]) end
    for i = first_drop, a - 1 do redis.call('HDEL', early, ARGV[i]) end
    if deadline == '' then redis.call('ZREM', KEYS[1], member) else redis.call('ZADD', KEYS[1], deadline, member) end
    out[g] = 1
  end
end
return out
"""

# The batch path of the two scripts above, for games without parked moves: one joined payload in
# and one joined reply out, because redis-py parses every reply item in Python
# (tests/bench/bench_clock_service.py).
# Keys are derived from ARGV[1] (key prefix): this assumes one Redis, as the rest of the service.
# ARGV: key prefix, ids joined by GS, early-move key prefix. Returns the values joined by GS ('' when
# missing), then for each game with parked moves its 1-based position and its hash (HGETALL): a
# game not started yet needs both, and a second round trip for the hashes cost as much as the read.
_LOAD_JOINED = """
local out = {}
local reply = {''}
for id in string.gmatch(ARGV[2], '[^\\29]+') do
  out[#out + 1] = redis.call('GET', ARGV[1] .. id) or ''
  local moves = redis.call('HGETALL', ARGV[3] .. id)
  if #moves > 0 then
    reply[#reply + 1] = #out
    reply[#reply + 1] = moves
  end
end
reply[1] = table.concat(out, '\\29')
return reply
"""

# KEYS: deadlines, epoch. ARGV: key prefix, then per game "expected|deadline|ttl|member" FS body,
# joined by GS, then the epoch the writer knows. Returns one character per game: '1' saved, '0' lost
# the race; or 'E' and writes nothing when the epoch is not the writer's.
_SAVE_JOINED = _HEADER + """
if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 'E' end
local out = {}
local payload = ARGV[2]
local from = 1
while from <= #payload do
  local stop = string.find(payload, '\\29', from, true) or (#payload + 1)
  local split = string.find(payload, '\\28', from, true)
  local expected, deadline, ttl, member = string.match(string.sub(payload, from, split - 1), '^(%d*)|(%d*)|(%d*)|(.*)$')
  local main = ARGV[1] .. member
  local version, row = header(redis.call('GET', main))
  if version ~= expected then
    out[#out + 1] = '0'
  else
    local value = tostring((tonumber(version) or 0) + 1) .. ';' .. row .. string.sub(payload, split + 1, stop - 1)
    if ttl == '' then redis.call('SET', main, value) else redis.call('SET', main, value, 'PX', ttl) end
    if deadline == '' then redis.call('ZREM', KEYS[1], member) else redis.call('ZADD', KEYS[1], deadline, member) end
    out[#out + 1] = '1'
  end
  from = stop + 1
end
return table.concat(out)
"""

# The copy of a PostgreSQL record (Triple Block): written only when its row version is newer
# than the copy's, and, unless ARGV[6] is '*', only if the string is still at that version.
# A copy already current whose deadline is in neither set (lost on its own: the string came
# back before the set entry went) gets the deadline again; a claimed game (in flight) keeps
# its claim. A Triple Block game lives for months: a lost deadline would never flag it (TB-4).
# KEYS: string, deadlines, early hash, inflight. ARGV: row version, member, deadline, ttl, body,
# expected version or '*', then plies to drop. Returns 1 written, 2 deadline put back, 0 older
# or already whole, -1 changed.
_MIRROR = _HEADER + """
local version, row = header(redis.call('GET', KEYS[1]))
local stored, given = tonumber(row), tonumber(ARGV[1])
if stored >= given then
  if stored == given and ARGV[3] ~= ''
      and not redis.call('ZSCORE', KEYS[2], ARGV[2]) and not redis.call('ZSCORE', KEYS[4], ARGV[2]) then
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
    return 2
  end
  return 0
end
if ARGV[6] ~= '*' and version ~= ARGV[6] then return -1 end
local value = tostring((tonumber(version) or 0) + 1) .. ';' .. ARGV[1] .. ARGV[5]
if ARGV[4] == '' then redis.call('SET', KEYS[1], value) else redis.call('SET', KEYS[1], value, 'PX', ARGV[4]) end
for i = 7, #ARGV do redis.call('HDEL', KEYS[3], ARGV[i]) end
if ARGV[3] == '' then redis.call('ZREM', KEYS[2], ARGV[2]) else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2]) end
return 1
"""

# KEYS: deadlines, inflight, epoch. ARGV: now, lease until, limit, the epoch the poller knows.
# Returns the nearest deadline left ('' when none: the poller sleeps until it without another round
# trip), then due members, then members whose lease ran out (their replica died before saving the
# flag); or only 'E' when the epoch is not the poller's (Redis lost everything, or was rebuilt).
_CLAIM = """
if redis.call('GET', KEYS[3]) ~= ARGV[4] then return {'E'} end
local out = {''}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[1], member)
  redis.call('ZADD', KEYS[2], ARGV[2], member)
  out[#out + 1] = member
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, member in ipairs(expired) do
  redis.call('ZADD', KEYS[2], ARGV[2], member)
  out[#out + 1] = member
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then out[1] = first[2] end
return out
"""

# Claiming chosen games only (a replica that may decide some games alone: `LiveStore.claim`).
# KEYS: deadlines, inflight, epoch. ARGV: now, lease until, the epoch the poller knows, then the
# games. Each is taken if still due or its lease ran out. Returns as _CLAIM, but the nearest
# deadline is the nearest not yet due: games due and not chosen are another replica's, or wait
# for this one to read their partitions; the next look takes them, not a spin on them.
_CLAIM_CHOSEN = """
if redis.call('GET', KEYS[3]) ~= ARGV[3] then return {'E'} end
local now = tonumber(ARGV[1])
local out = {''}
for i = 4, #ARGV do
  local member = ARGV[i]
  local deadline = redis.call('ZSCORE', KEYS[1], member)
  if deadline and tonumber(deadline) <= now then
    redis.call('ZREM', KEYS[1], member)
    redis.call('ZADD', KEYS[2], ARGV[2], member)
    out[#out + 1] = member
  else
    local lease = redis.call('ZSCORE', KEYS[2], member)
    if lease and tonumber(lease) <= now then
      redis.call('ZADD', KEYS[2], ARGV[2], member)
      out[#out + 1] = member
    end
  end
end
local first = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if first[2] then out[1] = first[2] end
return out
"""

# Writing stored copies back (PostgreSQL's `live_games`). KEYS: deadlines, epoch, the rebuild's
# token key. ARGV: string key prefix, early-move key prefix, ttl ms of parked moves, the epoch the
# writer knows ('' for a rebuild), the rebuild's token; then per game "version|deadline|ttl|member",
# the body, the parked moves as JSON ('' when none). A rebuild runs while the epoch is missing and
# its token stands (a rebuild taken over by another writes nothing more), and writes every game:
# what Redis holds beyond PostgreSQL's copy was written by batches whose copy never landed, and
# those are handled again; a restore on demand needs the writer's epoch and writes only a game
# Redis does not hold. Returns one character per game ('1' written, '0' left), or 'E'.
_RESTORE = _HEADER + """
local rebuilding = ARGV[4] == ''
if rebuilding then
  if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('GET', KEYS[3]) ~= ARGV[5] then return 'E' end
elseif redis.call('GET', KEYS[2]) ~= ARGV[4] then
  return 'E'
end
local out = {}
for a = 6, #ARGV, 3 do
  local version, deadline, ttl, member = string.match(ARGV[a], '^(%d+)|(%d*)|(%d*)|(.*)$')
  local main = ARGV[1] .. member
  local current = header(redis.call('GET', main))
  if rebuilding or current == '' then
    local value = version .. ';-1' .. ARGV[a + 1]
    if ttl == '' then redis.call('SET', main, value) else redis.call('SET', main, value, 'PX', ttl) end
    local early = ARGV[2] .. member
    redis.call('DEL', early)
    if ARGV[a + 2] ~= '' then
      for ply, move in pairs(cjson.decode(ARGV[a + 2])) do redis.call('HSET', early, ply, move) end
      redis.call('PEXPIRE', early, ARGV[3])
    end
    if deadline == '' then redis.call('ZREM', KEYS[1], member) else redis.call('ZADD', KEYS[1], deadline, member) end
    out[#out + 1] = '1'
  else
    out[#out + 1] = '0'
  end
end
return table.concat(out)
"""

# The start and the end of a rebuild. KEYS: epoch, the rebuild's token key. ARGV: the token, the
# lease of the token in ms. The epoch goes (no writer writes any more), the token names the rebuild.
_BEGIN_REBUILD = """
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return 1
"""
# KEYS: epoch, token key, deadlines, inflight. ARGV: the token, string key prefix, early-move key
# prefix, then game ids: each game goes from Redis, if rebuild `token` still stands.
_DROP = """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('GET', KEYS[2]) ~= ARGV[1] then return 'E' end
for i = 4, #ARGV do
  redis.call('DEL', ARGV[2] .. ARGV[i], ARGV[3] .. ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
  redis.call('ZREM', KEYS[4], ARGV[i])
end
return 'OK'
"""
# KEYS: epoch, token key. ARGV: the token, the new epoch. Only the rebuild the token names sets it.
_END_REBUILD = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return 1
"""


# How many due games per claimable one a replica that decides some games alone looks over.
CHOSEN_LOOKAHEAD = 20


class LiveStore:
    """Game records as Redis strings, with their deadlines in one sorted set."""

    def __init__(self, redis: aioredis.Redis, prefix: str, over_ttl_ms: int, parked_ttl_ms: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.deadlines = f"{prefix}:deadlines"
        self.inflight = f"{prefix}:inflight"
        # The sentinel: present, and equal to what this process knows, while Redis holds everything
        # it wrote. Every write script checks it, so no write lands in a Redis that lost the rest.
        self.epoch_key = f"{prefix}:epoch"
        self.rebuild_key = f"{prefix}:rebuilding"
        self.epoch = ""
        # Moves on with every epoch this process adopts: a caller passes the generation its reads were
        # made in, and records read under an older epoch are never written under a newer one (their
        # versions may have been reused since by writes made on the rebuilt copies).
        self.generation = 0
        # Called when a write finds the epoch changed: it makes Redis whole again (or learns the
        # epoch another replica rebuilt) before the write is tried again.
        self._recover: Callable[[], Awaitable[None]] | None = None
        self.over_ttl_ms = over_ttl_ms
        self.parked_ttl_ms = parked_ttl_ms
        # Parsed metas by their stored text: a game's meta never changes once it runs.
        self.metas: dict[str, GameMeta] = {}
        # The last record this process saved per game, with its stored text (version, body): the
        # bytes are put together only when a read compares them, off the move path.
        self._known: dict[str, tuple[str, str, ClockedGame]] = {}
        self.known_limit = 200_000
        self._save = redis.register_script(_SAVE)
        self._load_joined = redis.register_script(_LOAD_JOINED)
        self._save_joined = redis.register_script(_SAVE_JOINED)
        self._mirror = redis.register_script(_MIRROR)
        self._claim = redis.register_script(_CLAIM)
        self._claim_chosen = redis.register_script(_CLAIM_CHOSEN)
        self._restore = redis.register_script(_RESTORE)
        self._begin_rebuild = redis.register_script(_BEGIN_REBUILD)
        self._drop = redis.register_script(_DROP)
        self._end_rebuild = redis.register_script(_END_REBUILD)
        # Told the earliest deadline of every write that sets deadlines (the flag poller of this
        # process: it then needs no short blind poll to see them).
        self._deadline_watcher: Callable[[int], None] | None = None

    def on_lost(self, recover: Callable[[], Awaitable[None]]) -> None:
        """Have `recover` called (and awaited) when a write finds that Redis lost what this process wrote."""
        self._recover = recover

    def adopt(self, epoch: str) -> None:
        """Write under `epoch` from now on; what this process remembers of records written before is dropped."""
        self.epoch = epoch
        self.generation += 1
        self._known.clear()

    async def current_epoch(self) -> str | None:
        """The epoch Redis holds now (None when it has none: lost, or being rebuilt)."""
        value = await self.redis.get(self.epoch_key)
        return value.decode() if isinstance(value, bytes) else value

    async def lost(self) -> None:
        """A script refused a write (the epoch is not this process's): recover, or raise HotStateLost."""
        if self._recover is None:
            raise HotStateLost(f"Redis holds no epoch {self.epoch!r} for {self.prefix}: it lost or rebuilt its keys")
        await self._recover()

    def watch_deadlines(self, watcher: Callable[[int], None]) -> None:
        """Call `watcher` with the earliest deadline (competition ms) each write of this process sets."""
        self._deadline_watcher = watcher

    def key(self, game_id: str) -> str:
        """The string of one game."""
        return f"{self.prefix}:g:{game_id}"

    def early_key(self, game_id: str) -> str:
        """The moves of one game that came before its clock started, by ply."""
        return f"{self.prefix}:e:{game_id}"

    async def load(self, game_id: str) -> ClockedGame | None:
        """One game's record, or None when Redis has never heard of it."""
        return (await self.load_many([game_id]))[game_id]

    async def load_many(self, game_ids: Iterable[str]) -> dict[str, ClockedGame | None]:
        """Records of several games: one MGET, plus the parked moves of games not started yet."""
        ids = list(game_ids)
        if not ids:
            return {}
        parked: dict[int, list[bytes]] | None = None
        # The joined script splits on a separator and drops empty ids: those take the MGET path.
        if not all(game_id and game_id.isprintable() for game_id in ids):
            values = await self.redis.mget([self.key(game_id) for game_id in ids])
        else:
            reply = await self._load_joined(args=[f"{self.prefix}:g:", _GS.join(ids), f"{self.prefix}:e:"])
            values = [value or None for value in reply[0].split(_GS_BYTES)]
            parked = {int(reply[i]) - 1: reply[i + 1] for i in range(1, len(reply), 2)}
        records: dict[str, ClockedGame | None] = {}
        for game_id, value in zip(ids, values, strict=True):
            if value is None:
                records[game_id] = None
                continue
            known = self._known.pop(game_id, None)
            # Unchanged since this process saved it: skip parsing (a read's main cost). The
            # caller owns the object now; saving it puts it back, so no two callers share one.
            if known is not None and value == f"{known[0]};-1{known[1]}".encode():
                records[game_id] = known[2]
            else:
                records[game_id] = decode_value(game_id, value, self.metas)
        if parked is not None:
            for index, game_id in enumerate(ids):
                record = records[game_id]
                if record is not None and record.status in _NOT_STARTED:
                    flat = parked.get(index, ())
                    record.early_moves = {int(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}
            return records
        waiting = [r for r in records.values() if r is not None and r.status in _NOT_STARTED]
        if waiting:
            async with self.redis.pipeline(transaction=False) as pipe:
                for record in waiting:
                    pipe.hgetall(self.early_key(record.game_id))
                hashes = await pipe.execute()
            for record, moves in zip(waiting, hashes, strict=True):
                record.early_moves = {int(ply): move for ply, move in moves.items()}
        return records

    def take_known(self, game_ids: Iterable[str]) -> dict[str, ClockedGame]:
        """The records this process last saved of `game_ids`, unchecked against Redis (no round trip).

        Only for a caller that saves what it decides with them: the compare-and-set on their
        version then checks that nobody changed the game since (another replica, the flag
        poller, a gRPC call). The caller owns the objects; saving puts them back.
        """
        known = self._known
        taken: dict[str, ClockedGame] = {}
        for game_id in game_ids:
            entry = known.pop(game_id, None)
            if entry is not None:
                taken[game_id] = entry[2]
        return taken

    def _ttl(self, record: ClockedGame) -> str:
        if record.status is Status.OVER:
            return str(self.over_ttl_ms)
        if record.status is Status.NEW:
            # Events of a game that never starts (an untimed casual game) must not pile up.
            return str(self.parked_ttl_ms)
        return ""

    async def save_many(
        self, records: Sequence[ClockedGame], *, remember: bool = False, copies: list[LiveRow] | None = None,
        read_in: int | None = None,
    ) -> list[bool]:
        """Compare-and-set each record against the version it was read at; False = lost a race.

        A saved record's version moves on, so it can be saved again without reloading. With
        `remember`, the saved objects are kept and handed to the next `load_many` of their game
        instead of parsing its string again: only for callers that drop them once saved. Each live
        record saved is added to `copies`, for PostgreSQL's copy. When Redis has lost what this
        process wrote (its epoch changed), nothing is written: Redis is made whole again first
        (`on_lost`) and every record is reported lost, so callers read it again and redo their change.
        Records read in an older `generation` than this process's (`read_in`) are reported lost too.
        """
        if not records:
            return []
        if read_in is not None and read_in != self.generation:
            for record in records:
                self._known.pop(record.game_id, None)
            return [False] * len(records)
        epoch = self.epoch
        refused = False
        plain: list[int] = []
        other: list[int] = []
        for index, record in enumerate(records):
            # Parked moves and ids the joined payload cannot carry (control characters: not
            # printable) take the general script.
            if (record.consumed_early or not record.game_id.isprintable() or (
                    record.early_moves and any(ply not in record.consumed_early for ply in record.early_moves))):
                other.append(index)
            else:
                plain.append(index)
        saved = [False] * len(records)
        bodies = [encode_body(record) for record in records]
        # The earliest deadline written (of a lost race too: it only wakes the poller early).
        earliest: int | None = None
        if plain:
            parts = []
            running = Status.RUNNING
            for i in plain:
                record = records[i]
                if record.status is running:
                    # A running game's deadline, as `game_deadline_ms` gives it; no expiry.
                    deadline = game_deadline_ms(record)
                    if deadline is None:
                        head = f"{record.version}|||"
                    else:
                        head = f"{record.version}|{deadline}||"
                        if earliest is None or deadline < earliest:
                            earliest = deadline
                else:
                    # Only a running game has a deadline.
                    head = f"{record.version}||{self._ttl(record)}|"
                parts.append(f"{head}{record.game_id}{_FS}{bodies[i]}")
            payload = _GS.join(parts)
            reply = await self._save_joined(keys=[self.deadlines, self.epoch_key],
                                            args=[f"{self.prefix}:g:", payload, epoch])
            if reply == _REFUSED:
                refused = True
            else:
                for i, flag in zip(plain, reply, strict=True):
                    saved[i] = flag == _SAVED
        if other and not refused:
            keys: list[str] = [self.deadlines, self.epoch_key]
            args: list[str | bytes] = [str(self.parked_ttl_ms), epoch]
            for i in other:
                record = records[i]
                parked = [(ply, move) for ply, move in record.early_moves.items() if ply not in record.consumed_early]
                keys += [self.key(record.game_id), self.early_key(record.game_id)]
                deadline = game_deadline_ms(record)
                if deadline is not None and (earliest is None or deadline < earliest):
                    earliest = deadline
                args += [f"{record.version}|{'' if deadline is None else deadline}|{self._ttl(record)}|{len(parked)}|"
                         f"{len(record.consumed_early)}|{record.game_id}", bodies[i]]
                for ply, move in parked:
                    args += [str(ply), move]
                args += [str(ply) for ply in record.consumed_early]
            replies = await self._save(keys=keys, args=args)
            if replies == -1:
                refused = True
            else:
                for i, reply in zip(other, replies, strict=True):
                    saved[i] = bool(reply)
        if refused:
            # Whatever the joined call saved went to a Redis that has lost it since, or is being rebuilt.
            for record in records:
                self._known.pop(record.game_id, None)
            await self.lost()
            return [False] * len(records)
        if earliest is not None and self._deadline_watcher is not None:
            self._deadline_watcher(earliest)
        known = self._known
        if remember and len(known) + len(records) > self.known_limit:
            known.clear()
        for record, body, ok in zip(records, bodies, saved, strict=True):
            if not ok:
                known.pop(record.game_id, None)
                continue
            record.version = version = str(int(record.version or 0) + 1)
            if copies is not None and record.meta.kind is not _TRIPLE_BLOCK:
                status = record.status
                if status is _RUNNING:  # almost every save: no expiry, no parked moves
                    copies.append(LiveRow(record.game_id, int(version), "running", body, "", None, epoch))
                else:
                    ttl = self._ttl(record)
                    copies.append(LiveRow(record.game_id, int(version), status.value, body, encode_early(record),
                                          int(ttl) if ttl else None, epoch))
            if record.consumed_early:
                record.consumed_early.clear()
            if remember and record.meta.kind is not _TRIPLE_BLOCK and record.status is not _OVER and (
                    record.status not in _NOT_STARTED or not record.early_moves):
                # Only this process's copies are trusted, and only while the stored text is the
                # same byte for byte (a Triple Block copy's row version is not known here). A
                # game not started yet is kept only without parked moves: they live in a hash
                # of their own, which the copy would not follow (their expiry); parking one
                # moves the version on, so a copy without any is checked by the compare-and-set.
                # A finished game is seldom read again: kept, the copies of every game of the
                # last hours made each garbage collection scan hundreds of thousands of objects.
                known[record.game_id] = (version, body, record)
            else:
                known.pop(record.game_id, None)
        return saved

    async def save(self, record: ClockedGame) -> bool:
        """Compare-and-set one record."""
        return (await self.save_many([record]))[0]

    async def mirror(self, record: ClockedGame, row_version: int, expected: str | None = None) -> bool:
        """Copy a PostgreSQL record (Triple Block) into Redis unless a newer copy is there.

        With `expected`, copy only if the string is still at that version: the first copy of a
        new row replaces what Redis alone knew (a GameStarted, early moves), so it must not
        overwrite a change made since that was read. False when that happened.
        """
        deadline = game_deadline_ms(record)
        reply = await self._mirror(
            keys=[self.key(record.game_id), self.deadlines, self.early_key(record.game_id), self.inflight],
            args=[row_version, record.game_id, "" if deadline is None else str(deadline), self._ttl(record),
                  encode_body(record), "*" if expected is None else expected,
                  *(str(ply) for ply in record.consumed_early)],
        )
        if deadline is not None and self._deadline_watcher is not None:
            self._deadline_watcher(deadline)
        return int(reply) != -1

    async def claim(self, now_ms: int, lease_until_ms: int, limit: int,
                    decidable: Callable[[str], bool] | None = None) -> tuple[list[str], int | None]:
        """Take the games due at `now_ms` and those whose lease expired (one caller each); and the nearest deadline.

        The nearest deadline is the one left once they are taken (ms; None when no clock runs).
        With `decidable`, only the games it accepts are taken (looked over among the first
        `limit * CHOSEN_LOOKAHEAD` due), and the nearest deadline is the nearest not yet due.
        When Redis has lost its keys (or was rebuilt by another replica), it is made whole first
        (`on_lost`) and the claim is made then.
        """
        async def attempt() -> list[bytes]:
            keys = [self.deadlines, self.inflight, self.epoch_key]
            if decidable is None:
                return await self._claim(keys=keys, args=[now_ms, lease_until_ms, limit, self.epoch])
            window = limit * CHOSEN_LOOKAHEAD
            # One round trip for both reads: a replica among several polls this on every tick.
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrangebyscore(self.deadlines, "-inf", now_ms, start=0, num=window)
                pipe.zrangebyscore(self.inflight, "-inf", now_ms, start=0, num=window)
                due, expired = await pipe.execute()
            chosen = [game_id for game_id in dict.fromkeys(m.decode() for m in [*due, *expired])
                      if decidable(game_id)][:limit]
            return await self._claim_chosen(keys=keys, args=[now_ms, lease_until_ms, self.epoch, *chosen])

        reply = await attempt()
        if reply == [_REFUSED]:
            await self.lost()
            reply = await attempt()
            if reply == [_REFUSED]:
                raise HotStateLost(f"Redis lost its clock keys again while {self.prefix} was rebuilt")
        nearest = int(float(reply[0])) if reply[0] else None
        return list(dict.fromkeys(m.decode() for m in reply[1:])), nearest

    async def release(self, game_ids: Sequence[str]) -> None:
        """Drop claims on games handled or not due after all (a move or a return came in time)."""
        if game_ids:
            await self.redis.zrem(self.inflight, *game_ids)

    async def restore(self, entries: Sequence[Restore]) -> set[str]:
        """Write stored copies Redis does not hold (a restore on demand); return the games written.

        Raises HotStateLost when Redis has no epoch, or another: the caller recovers first.
        """
        return await self._write_copies(entries, self.epoch, "")

    async def begin_rebuild(self, token: str, lease_ms: int) -> None:
        """Drop the epoch (writers stop writing) and name the rebuild `token` for `lease_ms`."""
        await self._begin_rebuild(keys=[self.epoch_key, self.rebuild_key], args=[token, lease_ms])

    async def rebuild_copies(self, token: str, entries: Sequence[Restore], chunk: int = 500) -> int:
        """Make Redis hold exactly `entries` of its live games during rebuild `token`; return how many written.

        Every other game string goes, with its parked moves, deadline and claim: after a rebuild Redis
        holds what PostgreSQL holds (a game left out, finished a while ago or Triple Block, comes back
        from PostgreSQL when asked for; the rebuild copies the Triple Block rows after this).
        """
        kept = {entry.game_id for entry in entries}
        strings = f"{self.prefix}:g:"
        stale: list[str] = []
        async for key in self.redis.scan_iter(match=f"{strings}*", count=1_000):
            game_id = key.decode()[len(strings):]
            if game_id not in kept:
                stale.append(game_id)
        for start in range(0, len(stale), chunk):
            reply = await self._drop(keys=[self.epoch_key, self.rebuild_key, self.deadlines, self.inflight],
                                     args=[token, strings, f"{self.prefix}:e:", *stale[start:start + chunk]])
            if reply == _REFUSED:
                raise HotStateLost(f"the rebuild of {self.prefix} was taken over by another")
        written = 0
        for start in range(0, len(entries), chunk):
            written += len(await self._write_copies(entries[start:start + chunk], "", token))
        return written

    async def end_rebuild(self, token: str, epoch: str) -> bool:
        """Set the new epoch if rebuild `token` still stands (writers then write again); False if it was taken over."""
        return bool(await self._end_rebuild(keys=[self.epoch_key, self.rebuild_key], args=[token, epoch]))

    async def _write_copies(self, entries: Sequence[Restore], epoch: str, token: str) -> set[str]:
        if not entries:
            return set()
        args: list[str | int] = [f"{self.prefix}:g:", f"{self.prefix}:e:", self.parked_ttl_ms, epoch, token]
        for entry in entries:
            args += [f"{entry.version}|{'' if entry.deadline_ms is None else entry.deadline_ms}|"
                     f"{'' if entry.ttl_ms is None else entry.ttl_ms}|{entry.game_id}", entry.body, entry.early]
        reply = await self._restore(keys=[self.deadlines, self.epoch_key, self.rebuild_key], args=args)
        if reply == _REFUSED:
            raise HotStateLost(f"Redis's epoch for {self.prefix} is not {epoch or 'missing'}: "
                               "the copies were not written")
        deadlines = [entry.deadline_ms for entry, flag in zip(entries, reply, strict=True) if flag == _SAVED
                     and entry.deadline_ms is not None]
        if deadlines and self._deadline_watcher is not None:
            self._deadline_watcher(min(deadlines))
        return {entry.game_id for entry, flag in zip(entries, reply, strict=True) if flag == _SAVED}

    async def live_count(self) -> int:
        """Clocks with a pending deadline (running games), across all replicas."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zcard(self.deadlines)
            pipe.zcard(self.inflight)
            running, claimed = await pipe.execute()
        return int(running) + int(claimed)


_NOT_STARTED = frozenset((Status.NEW, Status.REQUESTED, Status.WAITING))
# A module name: reading a member through its enum class is an extra lookup, per saved game.
_TRIPLE_BLOCK = Kind.TRIPLE_BLOCK
_OVER = Status.OVER
_RUNNING = Status.RUNNING
# Separators of the joined payloads; game ids that are not printable (control characters) take
# the general path.
_GS, _FS = "\x1d", "\x1c"
_GS_BYTES = _GS.encode()
_SAVED = ord("1")
# What a write script answers when Redis's epoch is not the writer's.
_REFUSED = b"E"
