"""The ICCF Triple Block correspondence clock (TB-1..TB-9), in exact whole seconds.

Two layers:
- `TripleBlockState`: one player's three blocks (clock, increment, bank) and the pure
  amount rules (TB-2 refuel after a move, TB-3 manual refuel, TB-6 Guaranteed Time).
- `TripleBlockClock`: a game, both players plus timestamps: which clock runs, the ETL
  deadline (TB-4), claims and appeals (TB-7) and a team captain's refuel (TB-9).
Plus the event schedule from a requested duration (TB-5).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import date, timedelta

from arbiter.clocks.common import ClockError
from arbiter.clocks.speed import TimeControlError
from arbiter.vocabulary import Side

DAY_S = 86_400
# TB-1: the clock starts at 50 days and never shows more.
CLOCK_CAP_S = 50 * DAY_S
# TB-2: the increment is added for a player's first 50 moves only.
INCREMENT_MOVES = 50
# TB-6: Guaranteed Time resets the clock to exactly 3 days.
GUARANTEED_TIME_S = 3 * DAY_S
# TB-5: the server's choices.
INCREMENT_DAYS = tuple(range(1, 10))
BANK_DAYS = (50, 75)


class RefuelError(ClockError):
    """A manual refuel the rules refuse (TB-3)."""


class ClaimError(ClockError):
    """A claim or appeal operation the rules refuse (TB-7)."""


class ScheduleError(ValueError):
    """A requested Triple Block duration the server cannot schedule (TB-5)."""


@dataclass(frozen=True)
class TripleBlockState:
    """One player's blocks: `clock_s` (<= 50 days), `bank_s`, `increment_s`, moves made."""

    clock_s: int
    bank_s: int
    increment_s: int
    moves_made: int = 0
    guaranteed_time: bool = False

    @classmethod
    def initial(
        cls, increment_s: int, bank_s: int, guaranteed_time: bool = False
    ) -> TripleBlockState:
        """TB-1: a full 50-day clock, the given bank and increment, no move made."""
        if increment_s < 0 or bank_s < 0:
            raise ClockError(
                f"increment {increment_s} s and bank {bank_s} s must both be >= 0 seconds"
            )
        return cls(
            clock_s=CLOCK_CAP_S,
            bank_s=bank_s,
            increment_s=increment_s,
            guaranteed_time=guaranteed_time,
        )

    @property
    def increment_applies(self) -> bool:
        """TB-2: whether the next move still earns the increment (first 50 moves only)."""
        return self.moves_made < INCREMENT_MOVES and self.increment_s > 0

    @property
    def is_out_of_time(self) -> bool:
        """TB-4: the clock reached zero, which loses on time (ETL)."""
        return self.clock_s <= 0

    def elapse(self, seconds: int) -> TripleBlockState:
        """Think for `seconds`: only the clock runs down, never the bank (TB-3, TB-4)."""
        if seconds < 0:
            raise ClockError(f"cannot elapse a negative time ({seconds} s)")
        return replace(self, clock_s=max(0, self.clock_s - seconds))

    def after_move(self) -> TripleBlockState:
        """TB-2 then TB-6: the blocks once a move is completed (thinking time already elapsed).

        Total = clock + bank (+ increment for the first 50 moves); the clock takes up to
        50 days of it and the bank keeps the rest. With Guaranteed Time, a move completed
        with under 3 days, an empty bank and no increment any more resets the clock to 3 days.
        """
        if self.is_out_of_time:
            raise ClockError("the clock shows zero: the game is lost on time (TB-4)")
        earned = self.increment_s if self.increment_applies else 0
        total = self.clock_s + self.bank_s + earned
        clock = min(CLOCK_CAP_S, total)
        bank = total - clock
        past_increment = self.moves_made >= INCREMENT_MOVES
        if self.guaranteed_time and past_increment and bank == 0 and clock < GUARANTEED_TIME_S:
            clock = GUARANTEED_TIME_S
        return replace(self, clock_s=clock, bank_s=bank, moves_made=self.moves_made + 1)

    def refuel_room(self) -> int:
        """TB-3: the most a manual refuel can move now (bank left, room up to 50 days)."""
        if self.is_out_of_time:
            return 0
        return min(self.bank_s, CLOCK_CAP_S - self.clock_s)

    def manual_refuel(self, amount_s: int | None = None) -> TripleBlockState:
        """TB-3: move `amount_s` (None: all that fits) from the bank to a clock showing time."""
        if self.is_out_of_time:
            raise RefuelError("the clock already shows zero; refuel before it runs out (TB-3)")
        room = self.refuel_room()
        if amount_s is None:
            amount_s = room
        elif amount_s <= 0:
            raise RefuelError(f"a refuel moves a positive amount of time, not {amount_s} s")
        elif amount_s > self.bank_s:
            raise RefuelError(f"refuel of {amount_s} s asked but the bank holds {self.bank_s} s")
        elif self.clock_s + amount_s > CLOCK_CAP_S:
            raise RefuelError(
                f"refuel of {amount_s} s would take the clock ({self.clock_s} s) above "
                f"50 days; at most {CLOCK_CAP_S - self.clock_s} s fits (TB-1, TB-3)"
            )
        return replace(self, clock_s=self.clock_s + amount_s, bank_s=self.bank_s - amount_s)


class ClaimKind(enum.StrEnum):
    """What stopped the clocks (TB-7)."""

    CLAIM = "claim"
    APPEAL = "appeal"


@dataclass(frozen=True)
class Claim:
    """A pending claim or appeal (TB-7)."""

    claimant: Side
    kind: ClaimKind
    filed_at_s: int
    # A claim first stops only the claimant's clock; an unresolvable claim and an appeal
    # stop both.
    both_stopped: bool = False


@dataclass(frozen=True)
class TripleBlockClock:
    """A Triple Block game: both players' blocks, who is to move, and any pending claim.

    The side to move's stored `clock_s` is what it had at `running_since_s`; its clock runs
    from then on (TB-7: clocks never stop except by moving or by filing a claim).
    """

    white: TripleBlockState
    black: TripleBlockState
    to_move: Side = Side.WHITE
    running_since_s: int | None = None
    claim: Claim | None = None

    @classmethod
    def new(
        cls,
        increment_s: int,
        bank_s: int,
        guaranteed_time: bool = False,
        first: Side = Side.WHITE,
    ) -> TripleBlockClock:
        """A game with both players at their initial blocks (TB-1, TB-5), not yet running.

        TimeControlError unless the increment is 1..9 days and the bank 50 or 75 days (TB-5).
        """
        if increment_s not in _INCREMENTS_S or bank_s not in _BANKS_S:
            raise TimeControlError(
                f"Triple Block increment {increment_s} s and bank {bank_s} s: the increment is 1..9 days"
                f" and the bank 50 or 75 days (TB-5)"
            )
        state = TripleBlockState.initial(increment_s, bank_s, guaranteed_time)
        return cls(white=state, black=state, to_move=first)

    @property
    def is_running(self) -> bool:
        """Whether the side to move's clock is ticking."""
        return self.running_since_s is not None

    def side(self, side: Side) -> TripleBlockState:
        """The stored blocks of one side (as of `running_since_s` for the side to move)."""
        return self.white if side is Side.WHITE else self.black

    def _with_side(self, side: Side, state: TripleBlockState) -> TripleBlockClock:
        return replace(self, white=state) if side is Side.WHITE else replace(self, black=state)

    def _elapsed(self, now_s: int) -> int:
        if self.running_since_s is None:
            return 0
        if now_s < self.running_since_s:
            raise ClockError(
                f"time went backwards: now {now_s} s is before the clock started at "
                f"{self.running_since_s} s"
            )
        return now_s - self.running_since_s

    def _synced(self, now_s: int) -> TripleBlockClock:
        """The same clock with the running side's time charged up to `now_s`."""
        if self.running_since_s is None:
            return self
        state = self.side(self.to_move).elapse(self._elapsed(now_s))
        return replace(self._with_side(self.to_move, state), running_since_s=now_s)

    def start(self, now_s: int) -> TripleBlockClock:
        """Start the first mover's clock at `now_s`."""
        if self.is_running or self.claim is not None:
            raise ClockError("the clock is already started")
        return replace(self, running_since_s=now_s)

    def remaining(self, side: Side, now_s: int) -> int:
        """Seconds on `side`'s clock at `now_s` (the bank not included; never negative)."""
        if side is not self.to_move:
            return self.side(side).clock_s
        return self._synced(now_s).side(side).clock_s

    def flag_deadline(self) -> int | None:
        """TB-4: the instant a side loses on time (ETL), or None while stopped.

        Normally the side to move's; a side not to move whose clock a rejected claim or appeal
        emptied (TB-7) lost when the clocks restarted, so the deadline is then.
        """
        if self.running_since_s is None:
            return None
        if self.side(self.to_move.other).is_out_of_time:
            return self.running_since_s
        return self.running_since_s + self.side(self.to_move).clock_s

    def flagged_side(self, now_s: int) -> Side | None:
        """TB-4: the side whose clock shows zero at `now_s`, if any; the one that reached zero first."""
        synced = self._synced(now_s)
        # A side not to move can only show zero from a rejected claim's charge (TB-7), which
        # emptied it when the clocks restarted: no later than the side to move ran out.
        for side in (self.to_move.other, self.to_move):
            if synced.side(side).is_out_of_time:
                return side
        return None

    def is_flagged(self, now_s: int) -> bool:
        """TB-4: whether a clock shows zero at `now_s` (ETL)."""
        return self.flagged_side(now_s) is not None

    def after_move(self, side: Side, now_s: int) -> TripleBlockClock:
        """TB-2/TB-6: `side` completes a move at `now_s`; the opponent's clock starts."""
        if self.claim is not None:
            raise ClaimError(f"no move while a {self.claim.kind} is pending (TB-7)")
        if not self.is_running:
            raise ClockError("the clock is not running; start it before the first move")
        if side is not self.to_move:
            raise ClockError(f"{side} moved but it is {self.to_move}'s turn")
        synced = self._synced(now_s)
        if synced.side(side).is_out_of_time:
            raise ClockError(
                f"{side} lost on time at {self.flag_deadline()} s; a move at {now_s} s "
                "comes too late (TB-4)"
            )
        moved = synced.side(side).after_move()
        return replace(synced._with_side(side, moved), to_move=side.other, running_since_s=now_s)

    def manual_refuel(
        self, side: Side, now_s: int, amount_s: int | None = None
    ) -> TripleBlockClock:
        """TB-3: during their own turn `side` moves bank time to a clock that still shows time."""
        if side is not self.to_move:
            raise RefuelError(f"{side} can refuel only during their own turn (TB-3)")
        synced = self._synced(now_s)
        return synced._with_side(side, synced.side(side).manual_refuel(amount_s))

    def captain_refuel(
        self, side: Side, now_s: int, member_being_replaced: bool, amount_s: int | None = None
    ) -> TripleBlockClock:
        """TB-9: a team captain moves `side`'s bank time to its clock, only while that member is being replaced.

        The member cannot refuel for themselves then, so the captain does it for them, under the
        limits of a manual refuel (TB-1, TB-3): during the member's turn, never above 50 days,
        and only while the clock still shows time.
        """
        if not member_being_replaced:
            raise RefuelError(f"a captain refuels {side}'s clock only while that member is being replaced (TB-9)")
        return self.manual_refuel(side, now_s, amount_s)

    def file_claim(self, side: Side, now_s: int) -> TripleBlockClock:
        """TB-7: the side to move files a claim, which stops their clock."""
        if self.claim is not None:
            raise ClaimError(f"a {self.claim.kind} is already pending")
        if not self.is_running:
            raise ClaimError("the clock is not running")
        # A claim is a way to stop one's own running clock; a claim by the side not to move
        # stops nothing and needs no clock operation.
        if side is not self.to_move:
            raise ClaimError(f"{side}'s clock is not running; only {self.to_move} can stop it")
        synced = self._synced(now_s)
        if synced.side(side).is_out_of_time:
            raise ClaimError(f"{side} has already lost on time (TB-4)")
        claim = Claim(claimant=side, kind=ClaimKind.CLAIM, filed_at_s=now_s)
        return replace(synced, running_since_s=None, claim=claim)

    def escalate_claim(self, now_s: int) -> TripleBlockClock:
        """TB-7: the server cannot resolve the pending claim, so both clocks stop."""
        if self.claim is None or self.claim.kind is not ClaimKind.CLAIM:
            raise ClaimError("no pending claim to escalate")
        # The claimant was to move and is already stopped; nothing else runs. Kept explicit
        # so the stored claim says that both clocks are stopped.
        synced = self._synced(now_s)
        return replace(synced, running_since_s=None, claim=replace(self.claim, both_stopped=True))

    def file_appeal(self, side: Side, now_s: int) -> TripleBlockClock:
        """TB-7: either side appeals; both clocks stop until it is resolved."""
        if self.claim is not None:
            raise ClaimError(f"a {self.claim.kind} is already pending")
        if not self.is_running:
            raise ClaimError("the clock is not running")
        synced = self._synced(now_s)
        if synced.side(side).is_out_of_time:
            raise ClaimError(f"{side} has already lost on time (TB-4)")
        claim = Claim(claimant=side, kind=ClaimKind.APPEAL, filed_at_s=now_s, both_stopped=True)
        return replace(synced, running_since_s=None, claim=claim)

    def resolve_claim(self, now_s: int, upheld: bool) -> TripleBlockClock:
        """TB-7: the pending claim or appeal is decided at `now_s` and the clocks restart.

        Rejected: the claimant's clock is charged with the whole time the claim took (from
        filing to now); the charge may empty it, which is a loss on time (TB-4).
        """
        if self.claim is None:
            raise ClaimError("no pending claim or appeal to resolve")
        if now_s < self.claim.filed_at_s:
            raise ClockError(
                f"time went backwards: now {now_s} s is before the {self.claim.kind} was "
                f"filed at {self.claim.filed_at_s} s"
            )
        resolved = replace(self, claim=None, running_since_s=now_s)
        if upheld:
            return resolved
        claimant = self.claim.claimant
        charged = self.side(claimant).elapse(now_s - self.claim.filed_at_s)
        return resolved._with_side(claimant, charged)

    def stop(self, now_s: int) -> TripleBlockClock:
        """The clock frozen at `now_s` (game over): the side to move is charged its time."""
        return replace(self._synced(now_s), running_since_s=None)


@dataclass(frozen=True)
class Schedule:
    """TB-5: the blocks and dates the server fixes for a Triple Block event."""

    increment_days: int
    bank_days: int
    start: date

    @property
    def length_days(self) -> int:
        """TB-5: the event length, 2 x (50 + 50 x increment + bank) days."""
        return event_length_days(self.increment_days, self.bank_days)

    @property
    def end(self) -> date:
        """TB-5: start + length (TB-6 Guaranteed Time games may go on after it, TB-8)."""
        return self.start + timedelta(days=self.length_days)

    @property
    def increment_s(self) -> int:
        """The increment in seconds."""
        return self.increment_days * DAY_S

    @property
    def bank_s(self) -> int:
        """The initial bank in seconds."""
        return self.bank_days * DAY_S

    def new_clock(
        self, guaranteed_time: bool = False, first: Side = Side.WHITE
    ) -> TripleBlockClock:
        """A game clock with this schedule's blocks."""
        return TripleBlockClock.new(self.increment_s, self.bank_s, guaranteed_time, first)


def event_length_days(increment_days: int, bank_days: int) -> int:
    """TB-5: 2 x (50 + 50 x increment + bank) days."""
    return 2 * (CLOCK_CAP_S // DAY_S + INCREMENT_MOVES * increment_days + bank_days)


def schedule_table() -> list[tuple[int, int, int]]:
    """TB-5: every (increment days, bank days, length days), shortest event first."""
    rows = [(i, b, event_length_days(i, b)) for i in INCREMENT_DAYS for b in BANK_DAYS]
    return sorted(rows, key=lambda row: row[2])


MIN_LENGTH_DAYS = schedule_table()[0][2]
_INCREMENTS_S = frozenset(days * DAY_S for days in INCREMENT_DAYS)
_BANKS_S = frozenset(days * DAY_S for days in BANK_DAYS)


def schedule_for(days_requested: int, start: date) -> Schedule:
    """TB-5: the largest (increment, bank) whose event fits in `days_requested` days.

    "Largest" is the longest event length not above the request. Lengths are all distinct
    and grow with the increment first, then the bank (a bank step of 25 days adds 50 to the
    length, an increment step adds 100), so this is also the largest increment, then the
    largest bank. Requests above the longest event (9 and 75 days: 1150 days) get it.
    """
    if isinstance(days_requested, bool) or not isinstance(days_requested, int):
        raise ScheduleError(f"the duration is a whole number of days, not {days_requested!r}")
    fitting = [row for row in schedule_table() if row[2] <= days_requested]
    if not fitting:
        raise ScheduleError(
            f"a Triple Block event of {days_requested} days is too short: the shortest "
            f"schedule (increment 1 day, bank 50 days) lasts {MIN_LENGTH_DAYS} days (TB-5)"
        )
    increment_days, bank_days, _ = fitting[-1]
    return Schedule(increment_days=increment_days, bank_days=bank_days, start=start)
