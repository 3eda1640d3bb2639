"""Who loses when nobody moved in time: flag and disconnection verdicts (T-16..T-19, TB-4, TB-7, R-3).

Pure and stdlib-only. Both clocks are seen here in integer milliseconds: a Triple Block clock
counts whole seconds (TB: exact times), so its instants are `ms // 1000` on the way in and
`s * 1000` on the way out. The presence facts (who ever connected, who dropped when) come from
the play site; the caller keeps them and passes them in.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from arbiter.clocks.fischer import FischerClock
from arbiter.clocks.presence import disconnect_deadline
from arbiter.clocks.tripleblock import TripleBlockClock
from arbiter.vocabulary import Side, Termination

# Either clock a game can play with.
Clock = FischerClock | TripleBlockClock
# The terminations a verdict gives: the clock's own endings (T-16, T-17, T-19, TB-4).
VERDICT_REASONS: Final = (Termination.TIME, Termination.DISCONNECTION, Termination.NEVER_SAT, Termination.BOTH_ABSENT)


class VerdictKind(enum.StrEnum):
    """What a verdict publishes: a loser (ClockFlagged) or nobody (GameAbandoned, T-19)."""

    FLAGGED = "flagged"
    ABANDONED = "abandoned"


@dataclass(frozen=True)
class Presence:
    """What the play site said about one player's connection to a game."""

    # Ever online in this game, or acted in it: T-19 tells "never connected" from "present".
    seen: bool = False
    # Offline since this instant (ms); None while online or never seen offline.
    offline_since_ms: int | None = None


# A player the play site never reported: never connected, never dropped (T-19).
ABSENT = Presence()


@dataclass(frozen=True)
class Verdict:
    """The decision on a game (T-16, T-17, T-19, TB-4, R-3); `loser` is None when both were absent."""

    kind: VerdictKind
    loser: Side | None
    reason: Termination
    loser_never_sat: bool
    at_ms: int


# -- time units -------------------------------------------------------------------------------------


def clock_instant(clock: Clock, ms: int) -> int:
    """An instant in the clock's own unit: ms for Fischer, whole seconds for Triple Block."""
    return ms if isinstance(clock, FischerClock) else ms // 1000


def instant_ms(clock: Clock, instant: int) -> int:
    """A clock instant or duration in the clock's own unit, back in milliseconds."""
    return instant if isinstance(clock, FischerClock) else instant * 1000


def switched_at_ms(clock: Clock) -> int | None:
    """When the side to move's clock last switched on, in ms (None while stopped)."""
    if isinstance(clock, FischerClock):
        return clock.running_since_ms
    return None if clock.running_since_s is None else clock.running_since_s * 1000


def effective_ms(clock: Clock | None, at_ms: int | None, now_ms: int) -> int:
    """The instant an event takes effect: its own stamp, never after now nor before the last switch.

    A stamp in the future (a play site's clock ahead of ours) is now; a stamp before the last
    switch (events reordered in transit) is the switch, so time never runs backwards.
    """
    instant = now_ms if at_ms is None else min(at_ms, now_ms)
    last = switched_at_ms(clock) if clock is not None else None
    return instant if last is None or instant >= last else last


# -- who sat ----------------------------------------------------------------------------------------


def moves_made(clock: Clock, side: Side) -> int:
    """How many moves `side` made on this clock."""
    if isinstance(clock, FischerClock):
        return clock.side(side).moves
    return clock.side(side).moves_made


def has_sat(clock: Clock | None, side: Side) -> bool:
    """R-3: `side` sat, i.e. made at least one move (a game without a clock yet has no moves)."""
    return clock is not None and moves_made(clock, side) > 0


# -- deadlines --------------------------------------------------------------------------------------


def flag_deadline_ms(clock: Clock) -> int | None:
    """T-16/TB-4: when the side to move runs out, in ms; None while the clock is stopped."""
    deadline = clock.flag_deadline()
    if deadline is None or isinstance(clock, FischerClock):
        return deadline
    return deadline * 1000


def disconnect_deadline_ms(clock: Clock | None, side: Side, offline_since_ms: int | None) -> int | None:
    """T-17: when `side`, offline since `offline_since_ms`, loses for staying away; None if never.

    None while online, and before the side's first move (T-16, T-17: only the clock decides).
    Never for a Triple Block game: correspondence players are not expected to stay connected
    (TB-7: only moves and claims stop those clocks), so presence arms no deadline there.
    """
    if offline_since_ms is None or not isinstance(clock, FischerClock):
        return None
    return disconnect_deadline(offline_since_ms, clock.side(side).moves > 0)


def next_deadline_ms(
    clock: Clock, white_offline_since_ms: int | None = None, black_offline_since_ms: int | None = None
) -> int | None:
    """The next instant (ms) a running game must be looked at: a flag (T-16, TB-4) or a drop (T-17).

    None when nothing can happen without a new event (the clock is stopped and nobody is away).
    """
    deadline = clock.flag_deadline()
    if deadline is not None and not isinstance(clock, FischerClock):
        deadline *= 1000
    if white_offline_since_ms is None and black_offline_since_ms is None:
        return deadline
    for side, offline in ((Side.WHITE, white_offline_since_ms), (Side.BLACK, black_offline_since_ms)):
        disconnect = disconnect_deadline_ms(clock, side, offline)
        if disconnect is not None and (deadline is None or disconnect < deadline):
            deadline = disconnect
    return deadline


# -- verdicts ---------------------------------------------------------------------------------------


def flagged_side(clock: Clock, now_ms: int) -> Side | None:
    """The side whose clock shows zero at `now_ms`, or None (T-16, TB-4)."""
    if isinstance(clock, FischerClock):
        return clock.to_move if clock.is_flagged(now_ms) else None
    # TB-7: a rejected claim's charge can empty the clock of a side not to move.
    return clock.flagged_side(now_ms // 1000)


def decide(clock: Clock, now_ms: int, white: Presence = ABSENT, black: Presence = ABSENT) -> Verdict | None:
    """The verdict due at `now_ms` on a running game, or None when nothing is due.

    - T-17: a player who moved, dropped, and is not back within 30 s loses by disconnection.
    - T-16/TB-4: the side whose clock shows zero loses on time; if they never moved the game is
      unrated (R-3, `loser_never_sat`) and the reason is NEVER_SAT.
    - T-19: when a side flags before any move and their opponent never moved nor connected
      (`Presence.seen`), both are absent: the game is abandoned, nobody wins. An opponent who
      did connect wins: they could not move before the first mover did. Not for a Triple Block
      game, where presence means nothing (correspondence): the empty clock loses (TB-4).
    When several are due, the earliest deadline decides; at the same instant a flag comes
    before a disconnection (the clock is the primary rule, T-16).
    """
    presence = {Side.WHITE: white, Side.BLACK: black}
    due: list[tuple[int, bool, Side]] = []
    for side in (Side.WHITE, Side.BLACK):
        deadline = disconnect_deadline_ms(clock, side, presence[side].offline_since_ms)
        if deadline is not None and deadline <= now_ms:
            due.append((deadline, True, side))
    flagged = flagged_side(clock, now_ms)
    if flagged is not None:
        # For a side not to move (emptied by a rejected claim, TB-7), the deadline is the restart.
        deadline = flag_deadline_ms(clock)
        at = deadline if deadline is not None else now_ms
        due.append((min(at, now_ms), False, flagged))
    if not due:
        return None
    # min() keeps the first of equal keys: white before black for two drops at the same instant.
    at_ms, disconnected, loser = min(due, key=lambda item: item[:2])
    if disconnected:
        return Verdict(VerdictKind.FLAGGED, loser, Termination.DISCONNECTION, False, at_ms)
    if has_sat(clock, loser):
        return Verdict(VerdictKind.FLAGGED, loser, Termination.TIME, False, at_ms)
    opponent = loser.other
    if isinstance(clock, FischerClock) and not has_sat(clock, opponent) and not presence[opponent].seen:
        return Verdict(VerdictKind.ABANDONED, None, Termination.BOTH_ABSENT, True, at_ms)
    return Verdict(VerdictKind.FLAGGED, loser, Termination.NEVER_SAT, True, at_ms)
