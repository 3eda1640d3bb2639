"""What each play-site event does to a clocked game: pure functions over `ClockedGame`, no I/O.

Handlers fetch the record, call one of these, then save it (compare-and-set) and publish.
Every function is idempotent for a repeated event: a ply at or below the last applied one, a
second GameStarted, a second boost change nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from arbiter.clocks import (
    ClockError,
    FischerClock,
    TimeControlError,
    TripleBlockClock,
    disconnect_deadline_ms,
    effective_ms,
)
from arbiter.clocks.verdict import clock_instant
from arbiter.vocabulary import Side
from services.clock.clocked_game import ClockedGame, GameMeta, Kind, SidePresence, Status, with_meta

log = logging.getLogger(__name__)


_NOT_STARTED = frozenset((Status.NEW, Status.REQUESTED, Status.WAITING))
# What a record knows before any GameRequested or GameStarted.
_BLANK_META = GameMeta()
# A module name: reading a member through its enum class is an extra lookup, on every move.
_RUNNING = Status.RUNNING


@dataclass(frozen=True)
class AppliedMove:
    """A move the clock took: its ply and the instant (ms) it was charged at.

    Also a boost the clock applied (AR-5), with a `cause`: the play site hears of it at once.
    """

    ply: int
    at_ms: int
    cause: str = ""


def merge_meta(record: ClockedGame, incoming: GameMeta) -> None:
    """Fill what the record does not know yet from GameRequested or GameStarted."""
    current = record.meta
    if (incoming.variant and incoming.kind is not Kind.UNKNOWN and (
            incoming.requested or not (incoming.rated or incoming.boost_allowed)) and current == _BLANK_META):
        # A first event with a variant and a time control: the rules of `_merge_fields` would copy
        # every field of it, so it is taken whole (no copy built field by field, once per game).
        record.meta = incoming
    else:
        _merge_fields(record, current, incoming)
    for player_id in list(record.unplaced):
        side = record.meta.side_of(player_id)
        if side is not None:
            early = record.unplaced.pop(player_id)
            presence = record.presence[side]
            presence.seen = presence.seen or early.seen
            if early.offline_since_ms is not None:
                presence.offline_since_ms = early.offline_since_ms


def start_adds_nothing(meta: GameMeta) -> bool:
    """Whether merging any GameStarted into `meta` would leave it as it is (see `_merge_fields`).

    A GameStarted never carries what only GameRequested does (rated, boost allowed), and every
    other field is filled only where `meta` has none: a requested tournament game has them all.
    """
    return bool(meta.kind is not Kind.UNKNOWN and meta.variant and meta.white_id and meta.black_id
                and meta.competition_id and meta.competition_kind and meta.round)


def _merge_fields(record: ClockedGame, current: GameMeta, incoming: GameMeta) -> None:
    changes: dict[str, object] = {}
    for name in ("white_id", "black_id", "variant", "competition_id"):
        if not getattr(current, name) and getattr(incoming, name):
            changes[name] = getattr(incoming, name)
    if not current.variant and incoming.variant:
        changes["first"] = incoming.first
    for name in ("competition_kind", "round"):
        if not getattr(current, name) and getattr(incoming, name):
            changes[name] = getattr(incoming, name)
    if incoming.requested and not current.requested:
        # Only GameRequested carries these (rated, AR-5 boost allowed); its opening FEN also names the
        # first mover for sure (GameStarted of an older play site may not carry the start FEN).
        changes.update(requested=True, rated=incoming.rated, boost_allowed=incoming.boost_allowed)
        if record.clock is None:
            changes["first"] = incoming.first
    if current.kind is Kind.UNKNOWN and incoming.kind is not Kind.UNKNOWN:
        changes.update(
            kind=incoming.kind, base_s=incoming.base_s, increment_s=incoming.increment_s,
            tb_increment_days=incoming.tb_increment_days, tb_bank_days=incoming.tb_bank_days,
            guaranteed_time=incoming.guaranteed_time,
        )
    if changes:
        with_meta(record, **changes)


def on_requested(record: ClockedGame, meta: GameMeta, now_ms: int) -> list[AppliedMove]:
    """GameRequested: remember the game; start it if GameStarted came first (topics are unordered)."""
    merge_meta(record, meta)
    if record.status is Status.NEW:
        record.status = Status.REQUESTED
    if record.status is Status.WAITING and record.kind is not Kind.UNKNOWN:
        return start_clock(record, now_ms)
    return []


def on_started(record: ClockedGame, meta: GameMeta, started_at_ms: int | None, now_ms: int) -> list[AppliedMove]:
    """GameStarted: the first mover's clock runs from `started_at` whoever is present (T-16)."""
    merge_meta(record, meta)
    if record.status not in (Status.NEW, Status.REQUESTED):
        return []
    record.started_at_ms = started_at_ms if started_at_ms is not None else now_ms
    if record.kind is Kind.UNKNOWN:
        # A GameStarted without a time control: the clock starts when GameRequested brings it.
        record.status = Status.WAITING
        return []
    return start_clock(record, now_ms)


def start_clock(record: ClockedGame, now_ms: int) -> list[AppliedMove]:
    """Start the clock at the game's opening, then apply the boosts and moves that came early."""
    started = min(record.started_at_ms if record.started_at_ms is not None else now_ms, now_ms)
    try:
        clock = record.meta.new_clock()
    except TimeControlError as error:
        # Stored before the rules refused such a control (TB-5): the game waits without a clock
        # rather than fail every delivery of its events.
        log.warning("game left without a clock: the rules refuse its time control",
                    extra={"game_id": record.game_id, "error": str(error)})
        record.status = Status.WAITING
        return []
    record.clock = clock.start(clock_instant(clock, started))
    record.status = Status.RUNNING
    applied: list[AppliedMove] = []
    for player_id, at_ms in sorted(record.pending_boosts.items()):
        if boost(record, player_id, at_ms, now_ms) == "applied" and not applied:
            # The clocks as the play site must show them now (AR-5); a later early move says it again.
            applied.append(AppliedMove(record.ply, max(now_ms, game_switch_ms(record)), cause="boost"))
    record.pending_boosts.clear()
    for ply in sorted(record.early_moves):
        player_id, _, played_at = record.early_moves[ply].decode().partition("\x1f")
        record.consumed_early.add(ply)
        if apply_move(record, player_id, ply, int(played_at) if played_at else None, now_ms) == "applied":
            applied.append(AppliedMove(ply, game_switch_ms(record)))
    return applied


def game_switch_ms(record: ClockedGame) -> int:
    """The instant of the clock's last switch, in ms."""
    clock = record.clock
    if isinstance(clock, FischerClock):
        return clock.running_since_ms or 0
    assert clock is not None
    return (clock.running_since_s or 0) * 1000


def park_move(record: ClockedGame, player_id: str, ply: int, played_at_ms: int | None) -> None:
    """Keep a move that arrived before the clock started; it is applied at the start."""
    stamp = "" if played_at_ms is None else str(played_at_ms)
    record.early_moves[ply] = f"{player_id}\x1f{stamp}".encode()
    record.consumed_early.discard(ply)


def apply_move(record: ClockedGame, player_id: str, ply: int, played_at_ms: int | None, now_ms: int) -> str:
    """A MoveMade: charge the mover's time, add the increment, switch (TB-2/TB-6 for Triple Block).

    Returns the outcome counted in the metrics: applied, stale (ply already applied), parked
    (clock not started yet), after_end, not_a_player, wrong_turn, or late (the mover had
    already run out: the flag stands).
    """
    if ply <= record.ply:
        return "stale"
    status = record.status
    clock = record.clock
    if status is not _RUNNING or clock is None:
        if status in _NOT_STARTED:
            park_move(record, player_id, ply, played_at_ms)
            return "parked"
        return "after_end"
    side = record.meta.side_of(player_id)
    if side is None:
        return "not_a_player"
    if side is not clock.to_move:
        return "wrong_turn"
    at_ms = effective_ms(clock, played_at_ms, now_ms)
    offline = record.offline_since_ms(side)
    if offline is not None and _away_too_long(record, side, offline, at_ms):
        # The loss stands, as for a late "online": a move that reached the clock while its flags
        # were held back must not undo it.
        return "late"
    try:
        record.clock = clock.after_move(side, at_ms if isinstance(clock, FischerClock) else at_ms // 1000)
    except ClockError:
        return "late"
    record.ply = ply
    record.mark_seen(side)
    if offline is not None and at_ms >= offline:
        # A player who moves is back, even if their "online" event is still on its way.
        record.presence[side].offline_since_ms = None
    return "applied"


def on_presence(record: ClockedGame, player_id: str, online: bool, at_ms: int | None, now_ms: int) -> str:
    """PlayerPresenceChanged (T-16, T-17).

    Before a player's first move only the facts are kept (seen, offline since): the clock
    decides. After it, going offline arms the 30 s deadline (`arbiter.clocks.disconnect_deadline_ms`)
    and coming back before it disarms it; coming back after it changes nothing, the loss stands.
    """
    if not record.is_live:
        return "after_end"
    at = now_ms if at_ms is None else min(at_ms, now_ms)
    side = record.meta.side_of(player_id)
    if side is None and record.meta.white_id:
        return "not_a_player"
    presence = record.presence[side] if side is not None else record.unplaced.setdefault(player_id, SidePresence())
    if online:
        presence.seen = True
        offline = presence.offline_since_ms
        if offline is None:
            return "handled"
        if _away_too_long(record, side, offline, at):
            return "too_late"
        presence.offline_since_ms = None
        return "handled"
    if presence.offline_since_ms is None:
        presence.offline_since_ms = at
    return "handled"


def _away_too_long(record: ClockedGame, side: Side | None, offline_since_ms: int, at_ms: int) -> bool:
    """T-17: whether `at_ms` is past the deadline `disconnect_deadline_ms` gives a player offline since then."""
    deadline = None if side is None else disconnect_deadline_ms(record.clock, side, offline_since_ms)
    return deadline is not None and at_ms >= deadline


def boost(record: ClockedGame, player_id: str, at_ms: int | None, now_ms: int) -> str:
    """AR-5: the player boosts before their own first move, paying with their clock."""
    side = record.meta.side_of(player_id)
    if side is None and record.meta.white_id:
        return "not_a_player"
    if record.meta.requested and not record.meta.boost_allowed:
        return "not_allowed"
    if record.status in (Status.NEW, Status.REQUESTED, Status.WAITING):
        record.pending_boosts.setdefault(player_id, now_ms if at_ms is None else at_ms)
        presence = record.presence[side] if side is not None else record.unplaced.setdefault(player_id, SidePresence())
        presence.seen = True
        return "parked"
    if side is None:
        return "not_a_player"
    clock = record.clock
    if record.status is not Status.RUNNING or not isinstance(clock, FischerClock):
        return "ignored"
    if clock.side(side).moves > 0:
        return "after_first_move"
    try:
        record.clock = clock.boost(side, effective_ms(record.clock, at_ms, now_ms))
    except ClockError:
        # Boosted already, or the cut would empty the clock.
        return "refused"
    record.mark_seen(side)
    return "applied"


def boost_published(
    record: ClockedGame, player_id: str, at_ms: int | None, now_ms: int
) -> tuple[str, list[AppliedMove]]:
    """`boost`, plus the ClockState the play site needs when the clock applied it (AR-5: the cut shows)."""
    outcome = boost(record, player_id, at_ms, now_ms)
    side = record.meta.side_of(player_id)
    if outcome != "applied" or side is None:
        return outcome, []
    # Not before the last switch: `now_ms` was read before a retry that may have loaded a later move.
    return outcome, [AppliedMove(record.ply, max(now_ms, game_switch_ms(record)), cause=f"boost-{side.value}")]


def on_finished(record: ClockedGame, finished_at_ms: int | None, now_ms: int) -> str:
    """GameFinished: the play site ended the game; the clock stops and no flag can follow."""
    if record.status is Status.OVER:
        return "duplicate"
    at = effective_ms(record.clock, finished_at_ms, now_ms)
    if record.clock is not None and record.clock.is_running:
        record.clock = record.clock.stop(clock_instant(record.clock, at))
    record.status = Status.OVER
    record.ended_at_ms = at
    return "handled"


def conclude(record: ClockedGame, verdict_at_ms: int) -> None:
    """A decided game: the clock stops at the verdict's instant."""
    clock = record.clock
    if clock is not None and clock.is_running:
        instant = clock_instant(clock, verdict_at_ms)
        if isinstance(clock, TripleBlockClock):
            record.clock = clock.stop(max(instant, clock.running_since_s or 0))
        else:
            record.clock = clock.stop(max(instant, clock.running_since_ms or 0))
    record.ended_at_ms = verdict_at_ms

