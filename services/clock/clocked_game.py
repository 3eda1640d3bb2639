"""One game as the clock service keeps it: the clock, presence, parked events, and the flag verdict.

No I/O: the rules of `arbiter.clocks` and the contracts' numbers (kept in stored verdicts). The same
record is a Redis string for live games and a PostgreSQL row (mirrored in Redis) for Triple Block
games; `encode_body`/`decode_body` are the codec.
Competition time is integer milliseconds since the Unix epoch; Triple Block clocks count whole
seconds (TB: exact times), so their instants are `ms // 1000`.

`game_deadline_ms` and `game_verdict` hand a record's clock and presence facts to the rules
of `arbiter.clocks.verdict` (T-16..T-19, TB-4, R-3). `StoredCopy` and `Restore` are a live record as
PostgreSQL keeps it for a Redis loss, and what writing it back to Redis sets.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, replace
from typing import NamedTuple

from arbiter.clocks import (
    DAY_S,
    Claim,
    ClaimKind,
    ClockError,
    FischerClock,
    Presence,
    SideClock,
    TripleBlockClock,
    TripleBlockState,
    Verdict,
    VerdictKind,
    decide,
    has_sat,
    next_deadline_ms,
)
from arbiter.kit.convert import TERMINATION, TERMINATION_TO_PROTO
from arbiter.vocabulary import Side


class Status(enum.StrEnum):
    """Where a game is in the clock service's life cycle."""

    # Only early events seen (presence, moves, boosts) before any GameRequested/GameStarted.
    NEW = "new"
    # GameRequested seen: time control known, the play site has not opened the game yet.
    REQUESTED = "requested"
    # GameStarted seen without a time control: waiting for GameRequested to bring it.
    WAITING = "waiting"
    RUNNING = "running"
    # A flag was decided in Redis; its event is not yet saved in PostgreSQL.
    DECIDED = "decided"
    OVER = "over"


class Kind(enum.StrEnum):
    """Which clock the game plays with."""

    UNKNOWN = ""
    FISCHER = "fischer"
    TRIPLE_BLOCK = "triple_block"


@dataclass(frozen=True)
class GameMeta:
    """What GameRequested/GameStarted tell about a game; written once, then read."""

    white_id: str = ""
    black_id: str = ""
    variant: str = ""
    first: Side = Side.WHITE
    competition_kind: int = 0
    competition_id: str = ""
    round: int = 0
    rated: bool = False
    boost_allowed: bool = False
    # GameRequested seen (rated and boost_allowed come only from it).
    requested: bool = False
    kind: Kind = Kind.UNKNOWN
    base_s: float = 0.0
    increment_s: float = 0.0
    tb_increment_days: int = 0
    tb_bank_days: int = 0
    guaranteed_time: bool = False

    def side_of(self, player_id: str) -> Side | None:
        """The side `player_id` plays, or None when they are not a player of this game."""
        if player_id and player_id == self.white_id:
            return _WHITE
        if player_id and player_id == self.black_id:
            return _BLACK
        return None

    def player(self, side: Side) -> str:
        """The player id of `side`."""
        return self.white_id if side is _WHITE else self.black_id

    def new_clock(self) -> FischerClock | TripleBlockClock:
        """A clock for this game's time control, not yet running."""
        if self.kind is Kind.FISCHER:
            return FischerClock.new(self.base_s, self.increment_s, self.first)
        if self.kind is Kind.TRIPLE_BLOCK:
            return TripleBlockClock.new(
                self.tb_increment_days * DAY_S, self.tb_bank_days * DAY_S, self.guaranteed_time, self.first
            )
        raise ClockError("the game has no time control yet")

    def to_json(self) -> str:
        """The stored form."""
        defaults = _META_DEFAULTS
        # The module's encoder: json.dumps with separators builds a new encoder per call.
        return _JSON.encode({k: v for k, v in vars(self).items() if v != defaults[k]})

    @classmethod
    def from_json(cls, raw: str | bytes) -> GameMeta:
        """Read the stored form."""
        data = json.loads(raw)
        if "first" in data:
            data["first"] = Side(data["first"])
        if "kind" in data:
            data["kind"] = Kind(data["kind"])
        return cls(**data)


_EMPTY_META = GameMeta()
_META_DEFAULTS = dict(vars(_EMPTY_META))
_STATUSES = {status.value: status for status in Status}
_STATUS_TEXT = {status: status.value for status in Status}
# Members as module names: reading one through its enum class is an extra lookup, and the move path
# reads several per move (tests/bench/bench_clock_service.py).
_WHITE, _BLACK = Side.WHITE, Side.BLACK
_RUNNING = Status.RUNNING


@dataclass
class SidePresence:
    """What the play site said about one player's connection to this game."""

    # Ever online in this game (or acted in it): T-19 tells "never connected" from "present".
    seen: bool = False
    # Offline since this instant (ms); None while online or never seen offline.
    offline_since_ms: int | None = None


def verdict_to_json(verdict: Verdict) -> str:
    """A verdict's stored form."""
    loser = verdict.loser.value if verdict.loser else ""
    return json.dumps([verdict.kind.value, loser, TERMINATION_TO_PROTO[verdict.reason], verdict.loser_never_sat,
                       verdict.at_ms])


def verdict_from_json(raw: str | bytes) -> Verdict:
    """Read a verdict's stored form."""
    kind, loser, reason, never_sat, at_ms = json.loads(raw)
    return Verdict(VerdictKind(kind), Side(loser) if loser else None, TERMINATION[reason], never_sat, at_ms)


_NO_META = GameMeta()


class ClockedGame:
    """One game's whole clock-service state; `version` is the optimistic-concurrency token.

    Not a record of a played game (that is `arbiter.competition.records.PlayedGame`, and the
    contracts' `GameRecord`): the clock's own working state of a game, from its request to its end.

    A plain class with slots: a batch of moves builds one per game, and the presence facts,
    rarely needed on that path, are parsed only when read.
    """

    __slots__ = (
        "game_id", "version", "status", "meta", "started_at_ms", "clock", "ply", "_presence", "_presence_raw",
        "unplaced", "pending_boosts", "early_moves", "consumed_early", "verdict", "claim_reason", "ended_at_ms",
        "_stored_meta", "_stored_meta_raw", "_tail_key", "_tail",
    )

    def __init__(
        self, game_id: str, *, version: str = "", status: Status = Status.NEW, meta: GameMeta = _NO_META,
        started_at_ms: int | None = None, clock: FischerClock | TripleBlockClock | None = None, ply: int = 0,
        presence_raw: list[bool | int | None] | None = None, unplaced: dict[str, SidePresence] | None = None,
        pending_boosts: dict[str, int] | None = None, verdict: Verdict | None = None, claim_reason: str = "",
        ended_at_ms: int | None = None,
    ) -> None:
        self.game_id = game_id
        # The stored version this record was read at ("" when it was not stored yet).
        self.version = version
        self.status = status
        self.meta = meta
        self.started_at_ms = started_at_ms
        self.clock = clock
        self.ply = ply
        self._presence: dict[Side, SidePresence] | None = None
        # [white seen, white offline since, black seen, black offline since] as stored.
        self._presence_raw = presence_raw
        # Presence of players not known yet (events that overtook GameRequested/GameStarted), by player.
        self.unplaced = unplaced if unplaced is not None else {}
        # AR-5 boosts that arrived before the clock started: player id -> instant (ms).
        self.pending_boosts = pending_boosts if pending_boosts is not None else {}
        # Moves that arrived before the clock started ("player\x1fplayed_at" by ply).
        self.early_moves: dict[int, bytes] = {}
        # Early moves applied since loading, to delete from the store.
        self.consumed_early: set[int] = set()
        self.verdict = verdict
        self.claim_reason = claim_reason
        self.ended_at_ms = ended_at_ms
        # The meta as read, with its stored text: re-encoded only when it changed.
        self._stored_meta: GameMeta | None = None
        self._stored_meta_raw = ""
        # The stored text after the clock and ply, with what it was made of: a move changes only those two.
        self._tail_key: tuple[object, ...] | None = None
        self._tail = ""

    @property
    def presence(self) -> dict[Side, SidePresence]:
        """What the play site said about each side's connection."""
        if self._presence is None:
            raw = self._presence_raw or [False, None, False, None]
            self._presence = {Side.WHITE: SidePresence(bool(raw[0]), raw[1]),
                              Side.BLACK: SidePresence(bool(raw[2]), raw[3])}
        return self._presence

    def presence_stored(self) -> list[bool | int | None]:
        """The presence facts in their stored form."""
        if self._presence is None:
            return self._presence_raw or [False, None, False, None]
        white, black = self._presence[Side.WHITE], self._presence[Side.BLACK]
        return [white.seen, white.offline_since_ms, black.seen, black.offline_since_ms]

    def mark_seen(self, side: Side) -> None:
        """Record that `side` showed up (T-19), without building the presence objects."""
        if self._presence is not None:
            self._presence[side].seen = True
            return
        index = 0 if side is _WHITE else 2
        raw = self._presence_raw or [False, None, False, None]
        if not raw[index]:
            raw = list(raw)  # the stored list may be shared with a clone
            raw[index] = True
            self._presence_raw = raw

    def offline_since_ms(self, side: Side) -> int | None:
        """When `side` went offline (None while online), without building the presence objects."""
        if self._presence is not None:
            return self._presence[side].offline_since_ms
        raw = self._presence_raw
        return None if raw is None else raw[1 if side is _WHITE else 3]

    @property
    def kind(self) -> Kind:
        """The game's clock kind, once a time control is known."""
        return self.meta.kind

    @property
    def is_live(self) -> bool:
        """Whether the clock runs or is waiting to run (not decided, not over)."""
        return self.status not in (Status.DECIDED, Status.OVER)

    def has_sat(self, side: Side) -> bool:
        """R-3: `side` sat, i.e. made at least one move."""
        return has_sat(self.clock, side)


# -- deadlines and verdicts (the rules are arbiter.clocks.verdict) ----------------------------------


def game_deadline_ms(record: ClockedGame) -> int | None:
    """The next instant this service must look at the game (a flag or an expiring drop), or None."""
    clock = record.clock
    if record.status is not _RUNNING or clock is None:
        return None
    # Read straight from whichever form the presence facts are in: this runs on every save.
    presence = record._presence
    if presence is not None:
        return next_deadline_ms(clock, presence[_WHITE].offline_since_ms, presence[_BLACK].offline_since_ms)
    raw = record._presence_raw
    return next_deadline_ms(clock) if raw is None else next_deadline_ms(clock, raw[1], raw[3])


def game_verdict(record: ClockedGame, now_ms: int) -> Verdict | None:
    """The verdict due at `now_ms` on a running game (T-16..T-19, TB-4, R-3), or None."""
    if record.status is not Status.RUNNING or record.clock is None:
        return None
    white, black = record.presence[Side.WHITE], record.presence[Side.BLACK]
    return decide(record.clock, now_ms, Presence(white.seen, white.offline_since_ms),
                  Presence(black.seen, black.offline_since_ms))


# -- codec ------------------------------------------------------------------------------------------
# A record is stored as one string: "<version>;<row version>" + SEP + hot JSON + SEP + meta JSON.
# One string per game keeps a batch's read to one MGET, and JSON never emits a raw SEP.
SEP = "\x1e"
_JSON = json.JSONEncoder(separators=(",", ":"))


def encode_body(record: ClockedGame) -> str:
    """The stored record without its version header (early moves are kept apart)."""
    if record.meta is not record._stored_meta or not record._stored_meta_raw:
        record._stored_meta = record.meta
        record._stored_meta_raw = record.meta.to_json()
    if not (record.pending_boosts or record.unplaced or record.verdict or record.claim_reason):
        # The shape of almost every save (a running game): written without the JSON encoder,
        # byte for byte what it would write (the clock string never needs escaping).
        raw = record._presence_raw if record._presence is None else None
        white_seen, white_off, black_seen, black_off = raw or record.presence_stored()
        key = (white_seen, white_off, black_seen, black_off, record.ended_at_ms, record._stored_meta_raw)
        if key != record._tail_key:
            record._tail_key = key
            record._tail = (f'[{_scalar(white_seen)},{_scalar(white_off)},{_scalar(black_seen)},'
                            f'{_scalar(black_off)}],null,null,null,"",{_scalar(record.ended_at_ms)}]'
                            f'{SEP}{record._stored_meta_raw}')
        started = record.started_at_ms
        return (f'{SEP}["{_STATUS_TEXT[record.status]}",{"null" if started is None else started},'
                f'"{encode_clock(record.clock)}",{record.ply},{record._tail}')
    hot = [
        record.status.value, record.started_at_ms, encode_clock(record.clock), record.ply,
        record.presence_stored(), record.pending_boosts or None,
        {player: [p.seen, p.offline_since_ms] for player, p in record.unplaced.items()} or None,
        verdict_to_json(record.verdict) if record.verdict else None, record.claim_reason, record.ended_at_ms,
    ]
    return SEP + _JSON.encode(hot) + SEP + record._stored_meta_raw


def _scalar(value: bool | int | None) -> str:
    """A JSON scalar as `json.dumps` writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def decode_body(game_id: str, version: str, body: str, metas: dict[str, GameMeta] | None = None) -> ClockedGame:
    """Read a record from `encode_body`'s text; `metas` caches parsed metas (they never change)."""
    _, hot_raw, meta_raw = body.split(SEP, 2)
    (status, started_at, clock, ply, presence, boosts, unplaced, verdict, claim_reason, ended_at) = json.loads(hot_raw)
    meta = metas.get(meta_raw) if metas is not None else None
    if meta is None:
        meta = GameMeta.from_json(meta_raw)
        if metas is not None:
            if len(metas) > 100_000:
                metas.clear()
            metas[meta_raw] = meta
    record = ClockedGame(
        game_id, version=version, status=_STATUSES[status], meta=meta, started_at_ms=started_at,
        clock=decode_clock(clock), ply=ply, presence_raw=presence,
        unplaced={player: SidePresence(seen, offline) for player, (seen, offline) in (unplaced or {}).items()},
        pending_boosts=boosts or {}, verdict=verdict_from_json(verdict) if verdict else None,
        claim_reason=claim_reason, ended_at_ms=ended_at,
    )
    record._stored_meta = meta
    record._stored_meta_raw = meta_raw
    return record


def decode_value(game_id: str, value: bytes | str, metas: dict[str, GameMeta] | None = None) -> ClockedGame:
    """Read a stored string (header and body)."""
    text = value.decode() if isinstance(value, bytes) else value
    header, _, _ = text.partition(SEP)
    version, _, _ = header.partition(";")
    return decode_body(game_id, version, text[len(header):], metas)


def encode_clock(clock: FischerClock | TripleBlockClock | None) -> str:
    """A clock as one compact string ("" for none)."""
    if clock is None:
        return ""
    if isinstance(clock, FischerClock):
        since = "" if clock.running_since_ms is None else clock.running_since_ms
        w, b = clock.white, clock.black
        return (f"F;{clock.base_ms};{'w' if clock.to_move is _WHITE else 'b'};{since};"
                f"{w.remaining_ms},{w.increment_ms},{w.moves},{1 if w.boosted else 0};"
                f"{b.remaining_ms},{b.increment_ms},{b.moves},{1 if b.boosted else 0}")
    since = "" if clock.running_since_s is None else str(clock.running_since_s)
    claim = ""
    if clock.claim is not None:
        c = clock.claim
        claim = f"{c.claimant.value[0]},{c.kind.value},{c.filed_at_s},{int(c.both_stopped)}"
    return ";".join((
        "T", clock.to_move.value[0], since, _encode_tb_side(clock.white), _encode_tb_side(clock.black), claim,
    ))


def decode_clock(raw: str | None) -> FischerClock | TripleBlockClock | None:
    """Read a clock written by `encode_clock`."""
    if not raw:
        return None
    parts = raw.split(";")
    if parts[0] == "F":
        _, base, to_move, since, white, black = parts
        return FischerClock(
            base_ms=int(base), white=_decode_fischer_side(white), black=_decode_fischer_side(black),
            to_move=_SIDE_BY_LETTER[to_move], running_since_ms=int(since) if since else None,
        )
    _, to_move, since, white, black, claim_raw = parts
    claim = None
    if claim_raw:
        claimant, kind, filed_at, both = claim_raw.split(",")
        claim = Claim(_SIDE_BY_LETTER[claimant], ClaimKind(kind), int(filed_at), both == "1")
    return TripleBlockClock(
        white=_decode_tb_side(white), black=_decode_tb_side(black), to_move=_SIDE_BY_LETTER[to_move],
        running_since_s=int(since) if since else None, claim=claim,
    )


_SIDE_BY_LETTER = {"w": Side.WHITE, "b": Side.BLACK}


def _decode_fischer_side(raw: str) -> SideClock:
    remaining, increment, moves, boosted = raw.split(",")
    return SideClock(int(remaining), int(increment), int(moves), boosted == "1")


def _encode_tb_side(side: TripleBlockState) -> str:
    return f"{side.clock_s},{side.bank_s},{side.increment_s},{side.moves_made},{int(side.guaranteed_time)}"


def _decode_tb_side(raw: str) -> TripleBlockState:
    clock, bank, increment, moves, gt = raw.split(",")
    return TripleBlockState(int(clock), int(bank), int(increment), int(moves), gt == "1")


def with_meta(record: ClockedGame, **changes: object) -> None:
    """Change the record's meta (a new frozen value, so the codec knows to store it)."""
    record.meta = replace(record.meta, **changes)  # type: ignore[arg-type]  # GameMeta fields by name


# -- the PostgreSQL copy of live records (what a Redis loss is rebuilt from) ---------------------------


class StoredCopy(NamedTuple):
    """A live game's record as PostgreSQL keeps it: the Redis version it had, body, parked moves, time left."""

    game_id: str
    version: int
    body: str
    # Moves that came before the clock started, as `encode_early` writes them ('' when none).
    early: str
    # Milliseconds before Redis would have let it expire (a finished game, a game never started); None: never.
    left_ms: int | None


@dataclass(frozen=True, slots=True)
class Restore:
    """What writing one stored copy back to Redis sets: its string, parked moves, deadline and expiry."""

    game_id: str
    version: int
    body: str
    early: str
    # The deadline set entry: a running game's next deadline, or a decided game's verdict instant (the
    # flag poller then publishes that verdict, as after a crash); None for every other game.
    deadline_ms: int | None
    ttl_ms: int | None


def encode_early(record: ClockedGame) -> str:
    """The parked moves of a game not started yet, as JSON {ply: "player\x1fplayed_at"}; '' for any other game."""
    if record.status not in _NOT_STARTED or not record.early_moves:
        return ""
    parked = {str(ply): move.decode() for ply, move in record.early_moves.items() if ply not in record.consumed_early}
    return _JSON.encode(parked) if parked else ""


def decode_early(raw: str) -> dict[int, bytes]:
    """Parked moves from `encode_early`'s text."""
    return {int(ply): move.encode() for ply, move in json.loads(raw).items()} if raw else {}


def restore_of(copy: StoredCopy, metas: dict[str, GameMeta] | None = None) -> Restore | None:
    """What Redis must hold for one stored copy; None when it has expired (Redis would have dropped it)."""
    if copy.left_ms is not None and copy.left_ms <= 0:
        return None
    record = decode_body(copy.game_id, str(copy.version), copy.body, metas)
    deadline = game_deadline_ms(record)
    if record.status is Status.DECIDED and record.verdict is not None:
        deadline = record.verdict.at_ms
    return Restore(copy.game_id, copy.version, copy.body, copy.early, deadline, copy.left_ms)


def clocked_game_of(copy: StoredCopy, metas: dict[str, GameMeta] | None = None) -> ClockedGame:
    """The record a stored copy holds, at its version, with its parked moves."""
    record = decode_body(copy.game_id, str(copy.version), copy.body, metas)
    if record.status in _NOT_STARTED:
        record.early_moves = decode_early(copy.early)
    return record


_NOT_STARTED = frozenset((Status.NEW, Status.REQUESTED, Status.WAITING))
