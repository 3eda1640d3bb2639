"""Protobuf in and out: records to ClockState/ClockFlagged/GameAbandoned/Clock, events to GameMeta."""

from __future__ import annotations

from functools import lru_cache

from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.clocks import DAY_S, FischerClock, TimeControlError, TripleBlockClock, VerdictKind, disconnect_deadline_ms
from arbiter.clocks.verdict import clock_instant, instant_ms
from arbiter.contracts import clock_pb2 as cp
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.draughts import UnknownVariantError, variant_by_name
from arbiter.kit.convert import SIDE_TO_PROTO, TERMINATION_TO_PROTO
from arbiter.vocabulary import Side
from services.clock.clocked_game import (
    ClockedGame,
    GameMeta,
    Kind,
    Status,
    Verdict,
    game_deadline_ms,
)
from services.clock.operations import game_switch_ms

PRODUCER = "clock"
# Module names for the move path: reading an enum member through its class is an extra lookup.
_WHITE = Side.WHITE
_WHITE_TO_MOVE, _BLACK_TO_MOVE = common.COLOR_WHITE, common.COLOR_BLACK


def ms_of(stamp: Timestamp) -> int | None:
    """A protobuf Timestamp in ms, or None when it was not set."""
    if stamp.seconds == 0 and stamp.nanos == 0:
        return None
    return stamp.seconds * 1000 + stamp.nanos // 1_000_000


def first_mover(variant: str, start_fen: str = "") -> Side:
    """Who moves first: the side to move of the starting FEN (after an opening, O-2..O-9), else the variant's.

    Without a FEN: english and pool start with black; white when the variant is unknown.
    """
    if start_fen[:1] in ("W", "B"):
        return Side.WHITE if start_fen[0] == "W" else Side.BLACK
    try:
        return Side(variant_by_name(variant).rules.first.value)
    except UnknownVariantError:
        return Side.WHITE


def _time_control(meta: dict[str, object], control: common.TimeControl) -> None:
    which = control.WhichOneof("kind")
    if which == "fischer":
        meta.update(kind=Kind.FISCHER, base_s=float(control.fischer.base_seconds),
                    increment_s=float(control.fischer.increment_seconds))
    elif which == "triple_block":
        tb = control.triple_block
        meta.update(kind=Kind.TRIPLE_BLOCK, tb_increment_days=tb.increment_days, tb_bank_days=tb.bank_days,
                    guaranteed_time=tb.guaranteed_time)


def time_control_problem(control: common.TimeControl) -> str | None:
    """Why the rules refuse this time control (0+0, a Triple Block outside TB-5), or None; unset is none."""
    which = control.WhichOneof("kind")
    if which == "fischer":
        return _fischer_problem(control.fischer.base_seconds, control.fischer.increment_seconds)
    if which == "triple_block":
        return _triple_block_problem(control.triple_block.increment_days, control.triple_block.bank_days)
    return None


# Every game of the site goes through these: a site has few time controls, so their answers are kept.
@lru_cache(maxsize=256)
def _fischer_problem(base_s: int, increment_s: int) -> str | None:
    try:
        FischerClock.new(base_s, increment_s)
    except TimeControlError as error:
        return str(error)
    return None


@lru_cache(maxsize=64)
def _triple_block_problem(increment_days: int, bank_days: int) -> str | None:
    try:
        TripleBlockClock.new(increment_days * DAY_S, bank_days * DAY_S)
    except TimeControlError as error:
        return str(error)
    return None


def meta_of_requested(event: ev.GameRequested) -> GameMeta:
    """What GameRequested tells: players, variant, time control, rated, boost allowed (AR-5)."""
    meta: dict[str, object] = {
        "white_id": event.white_id, "black_id": event.black_id, "variant": event.variant,
        "first": first_mover(event.variant, event.opening.fen),
        "competition_kind": event.competition.kind, "competition_id": event.competition.id,
        "round": event.competition.round, "rated": event.rated, "boost_allowed": event.boost_allowed, "requested": True,
    }
    _time_control(meta, event.time_control)
    return GameMeta(**meta)  # type: ignore[arg-type]  # the fields built above, by name


def meta_of_started(event: ev.GameStarted) -> GameMeta:
    """What GameStarted tells: players, variant and, for casual games, the time control."""
    meta: dict[str, object] = {
        "white_id": event.white_id, "black_id": event.black_id, "variant": event.variant,
        "first": first_mover(event.variant, event.start_fen),
        "competition_kind": event.competition.kind, "competition_id": event.competition.id,
        "round": event.competition.round,
    }
    _time_control(meta, event.time_control)
    return GameMeta(**meta)  # type: ignore[arg-type]  # the fields built above, by name


def kind_of(control: common.TimeControl) -> Kind:
    """The clock kind a time control asks for."""
    which = control.WhichOneof("kind")
    if which == "fischer":
        return Kind.FISCHER
    if which == "triple_block":
        return Kind.TRIPLE_BLOCK
    return Kind.UNKNOWN


def clock_state(record: ClockedGame, at_ms: int, now_ms: int, cause: str = "") -> ev.ClockState:
    """The clocks as of `at_ms` (a move's instant), for the play site (topic clock.state).

    The event id is derived from the game and ply (and `cause` for a refuel or a claim, which
    change the clock without a move): a redelivered move gives the same message.
    """
    clock = record.clock
    assert clock is not None
    if isinstance(clock, FischerClock) and clock.running_since_ms == at_ms:
        # At a switch neither side has used time since: the stored times are the remaining ones.
        white_ms, black_ms = clock.white.remaining_ms, clock.black.remaining_ms
    else:
        instant = clock_instant(clock, at_ms)
        white_ms = instant_ms(clock, clock.remaining(Side.WHITE, instant))
        black_ms = instant_ms(clock, clock.remaining(Side.BLACK, instant))
    state = ev.ClockState(
        game_id=record.game_id, white_remaining_ms=white_ms, black_remaining_ms=black_ms,
        side_to_move=SIDE_TO_PROTO[clock.to_move], ply=record.ply,
    )
    # Plain field writes: Timestamp.FromMilliseconds is Python code, and this runs once per move.
    server_time = state.server_time
    server_time.seconds, millis = divmod(at_ms, 1000)
    server_time.nanos = millis * 1_000_000
    if isinstance(clock, TripleBlockClock):
        state.white_bank_ms = clock.white.bank_s * 1000
        state.black_bank_ms = clock.black.bank_s * 1000
    else:
        state.white_boosted = clock.white.boosted
        state.black_boosted = clock.black.boosted
    meta = state.meta
    meta.event_id = f"state:{record.game_id}:{record.ply}" + (f":{cause}" if cause else "")
    occurred = meta.occurred_at
    occurred.seconds, millis = divmod(now_ms, 1000)
    occurred.nanos = millis * 1_000_000
    meta.producer = PRODUCER
    return state


# A ClockState ready for Kafka: record key (game id), serialised message, event id, trace id (b"" for none).
EncodedState = tuple[bytes, bytes, bytes, bytes]


def encoded_state(state: ev.ClockState) -> EncodedState:
    """A ClockState as the publisher sends it."""
    meta = state.meta
    return state.game_id.encode(), state.SerializeToString(), meta.event_id.encode(), meta.trace_id.encode()


class StateEncoder:
    """The ClockStates of one batch of moves, serialised from one reused message.

    Filling one message in place and serialising it costs half of building a new ClockState
    per move (the move path's most expensive step once the moves are applied); the batch's
    `occurred_at` is written once. The bytes are those `clock_state(...).SerializeToString()`
    gives for the same record.
    """

    __slots__ = ("_now_ms", "_state", "_meta", "_server_time")

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms
        self._state = state = ev.ClockState()
        self._meta = meta = state.meta
        meta.producer = PRODUCER
        occurred = meta.occurred_at
        occurred.seconds, millis = divmod(now_ms, 1000)
        occurred.nanos = millis * 1_000_000
        self._server_time = state.server_time

    def after_move(self, record: ClockedGame, trace_id: str = "") -> EncodedState:
        """The state right after a move switched the clock (`clock_state` at the switch), in the move's chain."""
        clock = record.clock
        if type(clock) is not FischerClock or clock.running_since_ms is None:
            state = clock_state(record, game_switch_ms(record), self._now_ms)
            state.meta.trace_id = trace_id
            return encoded_state(state)
        game_id = record.game_id
        ply = record.ply
        event_id = f"state:{game_id}:{ply}"
        state = self._state
        state.game_id = game_id
        state.white_remaining_ms = clock.white.remaining_ms
        state.black_remaining_ms = clock.black.remaining_ms
        state.side_to_move = _WHITE_TO_MOVE if clock.to_move is _WHITE else _BLACK_TO_MOVE
        state.ply = ply
        state.white_boosted = clock.white.boosted
        state.black_boosted = clock.black.boosted
        server_time = self._server_time
        server_time.seconds, millis = divmod(clock.running_since_ms, 1000)
        server_time.nanos = millis * 1_000_000
        meta = self._meta
        meta.event_id = event_id
        meta.trace_id = trace_id
        return game_id.encode(), state.SerializeToString(), event_id.encode(), trace_id.encode()


def verdict_event(record: ClockedGame, verdict: Verdict) -> ev.ClockFlagged | ev.GameAbandoned:
    """ClockFlagged (T-16, T-17, TB-4, R-3) or GameAbandoned (T-19), with a deterministic event id.

    The id depends only on the game: whichever replica or retry writes it, consumers see one event.
    """
    meta = record.meta
    if verdict.kind is VerdictKind.ABANDONED:
        abandoned = ev.GameAbandoned(game_id=record.game_id, white_id=meta.white_id, black_id=meta.black_id)
        abandoned.abandoned_at.FromMilliseconds(verdict.at_ms)
        abandoned.meta.event_id = f"abandon:{record.game_id}"
        return abandoned
    assert verdict.loser is not None
    flagged = ev.ClockFlagged(
        game_id=record.game_id, loser_id=meta.player(verdict.loser), reason=TERMINATION_TO_PROTO[verdict.reason],
        loser_never_sat=verdict.loser_never_sat,
    )
    flagged.flagged_at.FromMilliseconds(verdict.at_ms)
    flagged.meta.event_id = f"flag:{record.game_id}"
    return flagged


_KIND = {Kind.FISCHER: cp.CLOCK_KIND_FISCHER, Kind.TRIPLE_BLOCK: cp.CLOCK_KIND_TRIPLE_BLOCK}


def clock_message(record: ClockedGame, now_ms: int) -> cp.Clock:
    """GetClock's answer: the remaining times as of `now_ms` (the server time it carries)."""
    clock = record.clock
    reply = cp.Clock(game_id=record.game_id, kind=_KIND.get(record.kind, cp.CLOCK_KIND_UNSPECIFIED),
                     ply=record.ply, finished=not record.is_live, claim_reason=record.claim_reason)
    reply.server_time.FromMilliseconds(now_ms)
    if clock is None and record.kind is not Kind.UNKNOWN:
        try:
            clock = record.meta.new_clock()
        except TimeControlError:
            clock = None  # a control the rules refuse, stored before they did: no clock to show
    for side, target in ((Side.WHITE, reply.white), (Side.BLACK, reply.black)):
        target.player_id = record.meta.player(side)
        presence = record.presence[side]
        target.online = presence.seen and presence.offline_since_ms is None
        disconnect = disconnect_deadline_ms(record.clock, side, presence.offline_since_ms)
        if disconnect is not None and record.status is Status.RUNNING:
            target.disconnect_deadline.FromMilliseconds(disconnect)
        if clock is None:
            continue
        running = record.status is Status.RUNNING and clock.is_running and clock.to_move is side
        target.running = running
        at = now_ms
        if record.ended_at_ms is not None:
            at = record.ended_at_ms
        instant = clock_instant(clock, at)
        switch = clock.running_since_ms if isinstance(clock, FischerClock) else clock.running_since_s
        if switch is not None:
            instant = max(instant, switch)
        target.remaining_ms = instant_ms(clock, clock.remaining(side, instant))
        if isinstance(clock, FischerClock):
            fischer = clock.side(side)
            target.increment_ms = fischer.increment_ms
            target.moves_made = fischer.moves
            target.boosted = fischer.boosted
        else:
            blocks = clock.side(side)
            target.bank_ms = blocks.bank_s * 1000
            target.increment_ms = blocks.increment_s * 1000
            target.moves_made = blocks.moves_made
        target.sat = target.moves_made > 0
    if clock is not None:
        reply.side_to_move = SIDE_TO_PROTO[clock.to_move]
        deadline = game_deadline_ms(record)
        if deadline is not None:
            reply.next_deadline.FromMilliseconds(deadline)
        if isinstance(clock, TripleBlockClock) and clock.claim is not None:
            claim = clock.claim
            reply.claim_state = "appeal" if claim.kind.value == "appeal" else "pending"
            reply.claimant_id = record.meta.player(claim.claimant)
            reply.claim_filed_at.FromMilliseconds(claim.filed_at_s * 1000)
            reply.claim_both_stopped = claim.both_stopped
    else:
        reply.side_to_move = SIDE_TO_PROTO[record.meta.first]
    if record.verdict is not None:
        reply.termination = TERMINATION_TO_PROTO[record.verdict.reason]
        if record.verdict.loser is not None:
            reply.loser_id = record.meta.player(record.verdict.loser)
    return reply
