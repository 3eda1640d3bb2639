"""The live Fischer clock (base + increment) and the arena boost (AR-5).

A `FischerClock` is an immutable state machine in integer milliseconds. Only the side to
move has a running clock; its stored `remaining_ms` is what it had at `running_since_ms`
(the last switch), so the clock service stores one row per game and computes the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from arbiter.clocks.common import ClockError
from arbiter.clocks.speed import TimeControlError
from arbiter.vocabulary import Side

# AR-5: the base is halved only when it can stand it, and the halved base has a floor.
BOOST_MIN_BASE_S = 60
BOOST_FLOOR_S = 30
# The sides as module names: reading a member through its enum class is an extra lookup, and the
# move path compares sides several times per move (tests/bench/bench_clock_service.py).
_WHITE, _BLACK = Side.WHITE, Side.BLACK


def boosted_time_control(base_s: float, inc_s: float) -> tuple[float, float]:
    """AR-5: the (base, increment) in seconds a player plays with after boosting.

    The increment is removed entirely; the base is halved when it is at least one minute,
    and the halved base never goes below 30 seconds. A 75 s base gives 37.5 s.
    """
    if base_s < 0 or inc_s < 0:
        raise TimeControlError(
            f"time control {base_s}+{inc_s}: base and increment must be >= 0 seconds"
        )
    if base_s >= BOOST_MIN_BASE_S:
        return max(BOOST_FLOOR_S, base_s / 2), 0
    return base_s, 0


def _to_ms(seconds: float) -> int:
    """Seconds (possibly half seconds from AR-5) as whole milliseconds."""
    return round(seconds * 1000)


@dataclass(frozen=True)
class SideClock:
    """One side of a Fischer clock."""

    remaining_ms: int
    increment_ms: int
    moves: int = 0
    boosted: bool = False


@dataclass(frozen=True)
class FischerClock:
    """A two-sided Fischer clock; every transition returns a new clock."""

    base_ms: int
    white: SideClock
    black: SideClock
    to_move: Side = Side.WHITE
    # The last switch (start or move): the side to move has had `remaining_ms` since then.
    # None while the clock is not running (not started yet, or stopped).
    running_since_ms: int | None = None

    @classmethod
    def new(cls, base_s: float, inc_s: float, first: Side = Side.WHITE) -> FischerClock:
        """A clock for base + increment seconds, not yet running; `first` moves first."""
        if base_s < 0 or inc_s < 0:
            raise TimeControlError(
                f"time control {base_s}+{inc_s}: base and increment must be >= 0 seconds"
            )
        if base_s == 0 and inc_s == 0:
            raise TimeControlError("time control 0+0 gives nobody any time")
        side = SideClock(remaining_ms=_to_ms(base_s), increment_ms=_to_ms(inc_s))
        return cls(base_ms=_to_ms(base_s), white=side, black=side, to_move=first)

    @property
    def is_running(self) -> bool:
        """Whether the side to move's clock is ticking."""
        return self.running_since_ms is not None

    def side(self, side: Side) -> SideClock:
        """The stored state of one side (as of the last switch for the side to move)."""
        return self.white if side is _WHITE else self.black

    def _with_side(self, side: Side, state: SideClock) -> FischerClock:
        return replace(self, white=state) if side is Side.WHITE else replace(self, black=state)

    def _elapsed(self, now_ms: int) -> int:
        if self.running_since_ms is None:
            return 0
        if now_ms < self.running_since_ms:
            raise ClockError(
                f"time went backwards: now {now_ms} ms is before the last switch "
                f"at {self.running_since_ms} ms"
            )
        return now_ms - self.running_since_ms

    def start(self, now_ms: int) -> FischerClock:
        """Start the first mover's clock (T-16: it runs from the game's opening, present or not)."""
        if self.is_running:
            raise ClockError(f"clock already running since {self.running_since_ms} ms")
        return replace(self, running_since_ms=now_ms)

    def remaining(self, side: Side, now_ms: int) -> int:
        """Milliseconds left to `side` at `now_ms` (never negative)."""
        state = self.side(side)
        if side is not self.to_move:
            return state.remaining_ms
        return max(0, state.remaining_ms - self._elapsed(now_ms))

    def flag_deadline(self) -> int | None:
        """The instant (ms) the side to move runs out, or None while the clock is not running."""
        if self.running_since_ms is None:
            return None
        return self.running_since_ms + self.side(self.to_move).remaining_ms

    def is_flagged(self, now_ms: int) -> bool:
        """Whether the side to move has no time left at `now_ms`."""
        return self.is_running and self.remaining(self.to_move, now_ms) == 0

    def after_move(self, side: Side, now_ms: int) -> FischerClock:
        """The clock after `side` moves at `now_ms`: elapsed time deducted, increment added."""
        since = self.running_since_ms
        if since is None:
            raise ClockError("the clock is not running; start it before the first move")
        if side is not self.to_move:
            raise ClockError(f"{side} moved but it is {self.to_move}'s turn")
        if now_ms < since:
            raise ClockError(
                f"time went backwards: now {now_ms} ms is before the last switch at {since} ms"
            )
        white = side is _WHITE
        state = self.white if white else self.black
        left = state.remaining_ms - (now_ms - since)
        if left <= 0:
            raise ClockError(
                f"{side} flagged at {since + state.remaining_ms} ms; a move at {now_ms} ms comes too late"
            )
        moved = _new_side(left + state.increment_ms, state.increment_ms, state.moves + 1, state.boosted)
        if white:
            return _new_clock(self.base_ms, moved, self.black, _BLACK, now_ms)
        return _new_clock(self.base_ms, self.white, moved, _WHITE, now_ms)

    def boost(self, side: Side, now_ms: int) -> FischerClock:
        """AR-5: `side` boosts before its own first move, paying with its clock.

        The increment is removed and the base cut as `boosted_time_control` says; time already
        used before boosting stays used (the cut is taken from what is left, as lichess does
        with berserk).
        """
        state = self.side(side)
        if state.boosted:
            raise ClockError(f"{side} has already boosted")
        if state.moves > 0:
            raise ClockError(f"{side} can boost only before their own first move (AR-5)")
        boosted_base_ms = _to_ms(boosted_time_control(self.base_ms / 1000, 0)[0])
        cut_ms = self.base_ms - boosted_base_ms
        left = self.remaining(side, now_ms)
        if left - cut_ms <= 0:
            raise ClockError(
                f"{side} has {left} ms left; boosting costs {cut_ms} ms and would empty the clock"
            )
        boosted = replace(
            state, remaining_ms=state.remaining_ms - cut_ms, increment_ms=0, boosted=True
        )
        return self._with_side(side, boosted)

    def stop(self, now_ms: int) -> FischerClock:
        """The clock frozen at `now_ms` (game over): the side to move is charged its time."""
        if not self.is_running:
            return self
        left = self.remaining(self.to_move, now_ms)
        frozen = replace(self.side(self.to_move), remaining_ms=left)
        return replace(self._with_side(self.to_move, frozen), running_since_ms=None)


# The move path builds two frozen values per move of every live game (tens of thousands a
# second): filling their __dict__ directly costs a third of the frozen __init__ (which goes
# through object.__setattr__ field by field) and a tenth of dataclasses.replace. Same values.
_object_new = object.__new__


def _new_side(remaining_ms: int, increment_ms: int, moves: int, boosted: bool) -> SideClock:
    """SideClock(remaining_ms, increment_ms, moves, boosted), built fast."""
    side = _object_new(SideClock)
    fields = side.__dict__
    fields["remaining_ms"] = remaining_ms
    fields["increment_ms"] = increment_ms
    fields["moves"] = moves
    fields["boosted"] = boosted
    return side


def _new_clock(
    base_ms: int, white: SideClock, black: SideClock, to_move: Side, running_since_ms: int | None
) -> FischerClock:
    """FischerClock(base_ms, white, black, to_move, running_since_ms), built fast."""
    clock = _object_new(FischerClock)
    fields = clock.__dict__
    fields["base_ms"] = base_ms
    fields["white"] = white
    fields["black"] = black
    fields["to_move"] = to_move
    fields["running_since_ms"] = running_since_ms
    return clock
