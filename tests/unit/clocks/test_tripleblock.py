"""Triple Block (TB-1..TB-9) with the seed's own cases, and the TB-5 schedules."""

from __future__ import annotations

from datetime import date

import pytest

from arbiter.clocks import (
    CLOCK_CAP_S,
    DAY_S,
    GUARANTEED_TIME_S,
    ClaimError,
    ClaimKind,
    ClockError,
    RefuelError,
    ScheduleError,
    TimeControlError,
    TripleBlockClock,
    TripleBlockState,
    event_length_days,
    schedule_for,
    schedule_table,
)
from arbiter.vocabulary import Side

W, B = Side.WHITE, Side.BLACK
HOUR = 3_600


def tb(
    clock_days: float = 50,
    bank_days: float = 50,
    inc_days: float = 1,
    moves: int = 0,
    gt: bool = False,
) -> TripleBlockState:
    return TripleBlockState(
        clock_s=round(clock_days * DAY_S),
        bank_s=round(bank_days * DAY_S),
        increment_s=round(inc_days * DAY_S),
        moves_made=moves,
        guaranteed_time=gt,
    )


# TB-1 ---------------------------------------------------------------------------------------


def test_clock_starts_at_fifty_days() -> None:
    state = TripleBlockState.initial(increment_s=DAY_S, bank_s=75 * DAY_S)
    assert state.clock_s == CLOCK_CAP_S == 50 * DAY_S
    assert state.bank_s == 75 * DAY_S
    assert state.moves_made == 0


# TB-2 ---------------------------------------------------------------------------------------


def test_increment_over_fifty_days_overflows_to_the_bank() -> None:
    # seed 2(d): the clock goes up to 50 days and the rest of the increment goes to the bank.
    state = tb(clock_days=50, bank_days=75, inc_days=5).elapse(2 * DAY_S).after_move()
    assert state.clock_s == CLOCK_CAP_S
    assert state.bank_s == 75 * DAY_S + 3 * DAY_S
    assert state.moves_made == 1


def test_increment_fills_the_clock_below_fifty_days() -> None:
    state = tb(clock_days=50, bank_days=0, inc_days=1).elapse(10 * DAY_S).after_move()
    assert state.clock_s == 41 * DAY_S
    assert state.bank_s == 0


def test_automatic_refuel_from_the_bank_after_every_move() -> None:
    # seed 1(e): refuelling happens automatically after each move, also past move 50.
    state = tb(clock_days=20, bank_days=40, inc_days=1, moves=60).after_move()
    assert state.clock_s == CLOCK_CAP_S
    assert state.bank_s == 10 * DAY_S
    partial = tb(clock_days=20, bank_days=5, inc_days=1, moves=60).after_move()
    assert (partial.clock_s, partial.bank_s) == (25 * DAY_S, 0)


def test_increment_only_for_the_first_fifty_moves() -> None:
    state = tb(clock_days=30, bank_days=0, inc_days=1, moves=49)
    assert state.increment_applies
    state = state.after_move()  # move 50 earns it
    assert (state.clock_s, state.moves_made) == (31 * DAY_S, 50)
    assert not state.increment_applies
    state = state.after_move()  # move 51 does not
    assert (state.clock_s, state.moves_made) == (31 * DAY_S, 51)


def test_exact_seconds_never_rounded_to_days() -> None:
    # seed 2(b): days/hours/minutes/seconds, no rounding even after a move.
    state = tb(clock_days=50, bank_days=0, inc_days=1).elapse(DAY_S + 3 * HOUR + 61).after_move()
    assert state.clock_s == 50 * DAY_S - 3 * HOUR - 61


def test_bank_only_grows_from_increment_overflow() -> None:
    state = tb(clock_days=50, bank_days=50, inc_days=3)
    state = state.elapse(10 * DAY_S).after_move()
    assert state.bank_s == 43 * DAY_S  # the clock took 7 days from the bank
    state = state.elapse(HOUR).after_move()
    assert state.bank_s == 43 * DAY_S + 3 * DAY_S - HOUR


# TB-3 ---------------------------------------------------------------------------------------


def test_manual_refuel_full_and_partial() -> None:
    state = tb(clock_days=10, bank_days=75)
    full = state.manual_refuel()
    assert (full.clock_s, full.bank_s) == (CLOCK_CAP_S, 35 * DAY_S)
    part = state.manual_refuel(5 * DAY_S)
    assert (part.clock_s, part.bank_s) == (15 * DAY_S, 70 * DAY_S)
    small_bank = tb(clock_days=10, bank_days=2).manual_refuel()
    assert (small_bank.clock_s, small_bank.bank_s) == (12 * DAY_S, 0)


def test_manual_refuel_never_above_fifty_days() -> None:
    with pytest.raises(RefuelError, match="above 50 days"):
        tb(clock_days=49, bank_days=10).manual_refuel(2 * DAY_S)


def test_manual_refuel_needs_time_on_the_clock() -> None:
    # TB-3: only while the clock still shows time.
    with pytest.raises(RefuelError, match="zero"):
        tb(clock_days=1, bank_days=10).elapse(DAY_S).manual_refuel()


def test_manual_refuel_bad_amounts() -> None:
    with pytest.raises(RefuelError, match="bank holds"):
        tb(clock_days=10, bank_days=1).manual_refuel(2 * DAY_S)
    with pytest.raises(RefuelError, match="positive"):
        tb(clock_days=10, bank_days=1).manual_refuel(0)


def test_thinking_more_than_fifty_days_on_one_move() -> None:
    # seed 2(g): refuel before the 50 days run out, as often as the bank allows.
    state = tb(clock_days=50, bank_days=75, inc_days=1)
    state = state.elapse(49 * DAY_S).manual_refuel()  # 1 day left, 49 days in: bank 26
    assert (state.clock_s, state.bank_s) == (CLOCK_CAP_S, 26 * DAY_S)
    state = state.elapse(49 * DAY_S).manual_refuel()  # 1 day left, the last 26 days in
    assert (state.clock_s, state.bank_s) == (27 * DAY_S, 0)
    # 98 days thought on one move, 27 still on the clock, nothing left to refuel with
    assert state.refuel_room() == 0


# TB-4 ---------------------------------------------------------------------------------------


def test_clock_reaching_zero_loses_on_time() -> None:
    state = tb(clock_days=2, bank_days=75).elapse(2 * DAY_S)
    assert state.is_out_of_time
    assert state.bank_s == 75 * DAY_S  # the bank never refuels by itself during the turn
    with pytest.raises(ClockError, match="lost on time"):
        state.after_move()


# TB-6 ---------------------------------------------------------------------------------------


def test_guaranteed_time_resets_to_exactly_three_days() -> None:
    state = tb(clock_days=1, bank_days=0, inc_days=1, moves=50, gt=True).elapse(7 * HOUR + 5)
    after = state.after_move()
    assert after.clock_s == GUARANTEED_TIME_S == 3 * DAY_S
    assert after.bank_s == 0
    # and after every such move for the rest of the game
    again = after.elapse(2 * DAY_S + 23 * HOUR).after_move()
    assert again.clock_s == 3 * DAY_S


def test_no_guaranteed_time_without_the_option() -> None:
    # seed 2(j), 3(g): no extra time ever, even under one day.
    state = tb(clock_days=1, bank_days=0, inc_days=1, moves=50, gt=False).elapse(20 * HOUR)
    assert state.after_move().clock_s == 4 * HOUR


def test_no_guaranteed_time_while_the_increment_applies() -> None:
    state = tb(clock_days=2, bank_days=0, inc_days=0.5, moves=10, gt=True).elapse(DAY_S + 23 * HOUR)
    assert state.after_move().clock_s == HOUR + 12 * HOUR


def test_no_guaranteed_time_while_the_bank_can_give_three_days() -> None:
    state = tb(clock_days=1, bank_days=10, inc_days=1, moves=60, gt=True).after_move()
    assert (state.clock_s, state.bank_s) == (11 * DAY_S, 0)


def test_no_guaranteed_time_at_three_days_or_more() -> None:
    state = tb(clock_days=4, bank_days=0, inc_days=1, moves=60, gt=True).elapse(DAY_S)
    assert state.after_move().clock_s == 3 * DAY_S
    state = tb(clock_days=4, bank_days=0, inc_days=1, moves=60, gt=True).elapse(HOUR)
    assert state.after_move().clock_s == 4 * DAY_S - HOUR


def test_guaranteed_time_only_past_move_fifty_whatever_the_increment() -> None:
    # TB-6 says "past move 50", not "no increment earned": a state without an increment (never a
    # new game's, TB-5) gets no reset before move 51.
    early = tb(clock_days=1, bank_days=0, inc_days=0, moves=0, gt=True).after_move()
    assert (early.clock_s, early.moves_made) == (DAY_S, 1)
    move_51 = tb(clock_days=1, bank_days=0, inc_days=0, moves=50, gt=True).after_move()
    assert move_51.clock_s == GUARANTEED_TIME_S


def test_guaranteed_time_when_the_bank_runs_dry_on_this_move() -> None:
    # Decision: the check is made after the automatic refuel (TB-2 then TB-6), so a bank too
    # small to reach 3 days never leaves a player worse off than an empty one.
    state = tb(clock_days=1, bank_days=0.5, inc_days=1, moves=60, gt=True).after_move()
    assert (state.clock_s, state.bank_s) == (3 * DAY_S, 0)


# The game clock: timestamps, turns, ETL deadline (TB-4), claims (TB-7) ---------------------


def game(bank_days: int = 50, inc_days: int = 1, gt: bool = False, at: int = 0) -> TripleBlockClock:
    return TripleBlockClock.new(inc_days * DAY_S, bank_days * DAY_S, gt).start(at)


def test_game_clock_runs_for_the_side_to_move() -> None:
    clock = game(at=100)
    assert clock.remaining(W, 100 + DAY_S) == 49 * DAY_S
    assert clock.remaining(B, 100 + DAY_S) == 50 * DAY_S
    assert clock.flag_deadline() == 100 + 50 * DAY_S


def test_game_move_switches_clocks_and_applies_tb2() -> None:
    clock = game(bank_days=75, inc_days=5, at=0).after_move(W, 2 * DAY_S)
    assert clock.to_move is B
    assert (clock.white.clock_s, clock.white.bank_s) == (50 * DAY_S, 78 * DAY_S)
    assert clock.flag_deadline() == 2 * DAY_S + 50 * DAY_S


def test_game_etl_deadline_and_late_move() -> None:
    clock = game(at=0)
    deadline = clock.flag_deadline()
    assert not clock.is_flagged(deadline - 1)
    assert clock.is_flagged(deadline)
    assert clock.flagged_side(deadline) is W
    with pytest.raises(ClockError, match="too late"):
        clock.after_move(W, deadline)


def test_game_manual_refuel_moves_the_deadline() -> None:
    clock = game(bank_days=75, at=0).manual_refuel(W, 40 * DAY_S)
    assert clock.white.clock_s == CLOCK_CAP_S
    assert clock.white.bank_s == 35 * DAY_S
    assert clock.flag_deadline() == 90 * DAY_S


def test_game_manual_refuel_only_on_own_turn() -> None:
    with pytest.raises(RefuelError, match="own turn"):
        game().manual_refuel(B, DAY_S)


def test_game_wrong_side_and_not_started() -> None:
    with pytest.raises(ClockError, match="white's turn"):
        game().after_move(B, 1)
    with pytest.raises(ClockError, match="not running"):
        TripleBlockClock.new(DAY_S, 50 * DAY_S).after_move(W, 1)


def test_rejected_claim_charges_the_whole_time_it_took() -> None:
    clock = game(at=0).file_claim(W, 10 * DAY_S)
    assert clock.claim is not None and clock.claim.kind is ClaimKind.CLAIM
    assert not clock.is_running
    assert clock.flag_deadline() is None
    assert clock.remaining(W, 30 * DAY_S) == 40 * DAY_S  # stopped while pending
    rejected = clock.resolve_claim(13 * DAY_S, upheld=False)
    assert rejected.claim is None
    assert rejected.white.clock_s == 37 * DAY_S
    assert rejected.flag_deadline() == 13 * DAY_S + 37 * DAY_S


def test_upheld_claim_costs_nothing() -> None:
    clock = game(at=0).file_claim(W, 10 * DAY_S).resolve_claim(13 * DAY_S, upheld=True)
    assert clock.white.clock_s == 40 * DAY_S
    assert clock.flag_deadline() == 13 * DAY_S + 40 * DAY_S


def test_unresolvable_claim_stops_both_clocks_and_may_cost_the_game() -> None:
    clock = game(at=0).file_claim(W, 10 * DAY_S).escalate_claim(11 * DAY_S)
    assert clock.claim is not None and clock.claim.both_stopped
    rejected = clock.resolve_claim(60 * DAY_S, upheld=False)
    assert rejected.white.clock_s == 0
    assert rejected.flagged_side(60 * DAY_S) is W


def test_appeal_stops_both_clocks_and_charges_a_wrong_appellant() -> None:
    # Black appeals while white is to move: white's clock stops too.
    clock = game(at=0).file_appeal(B, 5 * DAY_S)
    assert clock.claim is not None and clock.claim.kind is ClaimKind.APPEAL
    assert clock.remaining(W, 20 * DAY_S) == 45 * DAY_S
    rejected = clock.resolve_claim(8 * DAY_S, upheld=False)
    assert rejected.black.clock_s == 47 * DAY_S
    assert rejected.white.clock_s == 45 * DAY_S
    assert rejected.flag_deadline() == 8 * DAY_S + 45 * DAY_S


def test_a_wrong_appellant_emptied_by_the_charge_loses_when_the_clocks_restart() -> None:
    # White, not to move, appeals and waits a day longer than its clock holds for the rejection
    # (TB-7): white shows zero from the restart, a loss on time then (TB-4), before black runs out.
    clock = game(at=0).after_move(W, DAY_S).after_move(B, 2 * DAY_S).after_move(W, 42 * DAY_S)
    white_left = clock.white.clock_s
    appealed = clock.file_appeal(W, 43 * DAY_S)
    rejected = appealed.resolve_claim(43 * DAY_S + white_left + DAY_S, upheld=False)
    restart = 43 * DAY_S + white_left + DAY_S
    assert rejected.white.clock_s == 0 and rejected.to_move is B
    assert rejected.flag_deadline() == restart
    assert rejected.flagged_side(restart) is W
    assert rejected.flagged_side(restart + CLOCK_CAP_S) is W


@pytest.mark.parametrize(("increment_days", "bank_days"), [(0, 50), (10, 50), (1, 0), (1, 60), (0.5, 50)])
def test_new_game_blocks_outside_tb5_are_refused(increment_days: float, bank_days: int) -> None:
    with pytest.raises(TimeControlError, match="TB-5"):
        TripleBlockClock.new(round(increment_days * DAY_S), bank_days * DAY_S)


def test_every_tb5_schedule_makes_a_game() -> None:
    for increment_days, bank_days, _ in schedule_table():
        clock = TripleBlockClock.new(increment_days * DAY_S, bank_days * DAY_S)
        assert (clock.white.increment_s, clock.black.bank_s) == (increment_days * DAY_S, bank_days * DAY_S)


def test_claim_rules() -> None:
    with pytest.raises(ClaimError, match="not running"):
        game().file_claim(B, DAY_S)
    with pytest.raises(ClaimError, match="already pending"):
        game().file_claim(W, DAY_S).file_appeal(B, 2 * DAY_S)
    with pytest.raises(ClaimError, match="no move"):
        game().file_claim(W, DAY_S).after_move(W, 2 * DAY_S)
    with pytest.raises(ClaimError, match="no pending"):
        game().resolve_claim(DAY_S, upheld=True)
    with pytest.raises(ClaimError, match="escalate"):
        game().escalate_claim(DAY_S)


def test_refuel_during_own_pending_claim() -> None:
    clock = game(bank_days=75, at=0).file_claim(W, 10 * DAY_S).manual_refuel(W, 11 * DAY_S)
    assert clock.white.clock_s == CLOCK_CAP_S
    assert clock.white.bank_s == 65 * DAY_S


# TB-5 ---------------------------------------------------------------------------------------


def test_length_formula() -> None:
    assert event_length_days(1, 75) == 350
    assert event_length_days(5, 50) == 700
    assert event_length_days(1, 50) == 300
    assert event_length_days(9, 75) == 1150


def test_one_year_gives_one_day_and_seventy_five_days() -> None:
    schedule = schedule_for(365, date(2026, 1, 1))
    assert (schedule.increment_days, schedule.bank_days, schedule.length_days) == (1, 75, 350)
    assert schedule.end == date(2026, 12, 17)
    assert schedule.increment_s == DAY_S
    assert schedule.bank_s == 75 * DAY_S


def test_two_years_give_five_days_and_fifty_days() -> None:
    schedule = schedule_for(730, date(2026, 1, 1))
    assert (schedule.increment_days, schedule.bank_days, schedule.length_days) == (5, 50, 700)
    assert schedule.end == date(2027, 12, 2)


@pytest.mark.parametrize(
    ("days", "increment", "bank"),
    [
        (300, 1, 50),
        (349, 1, 50),
        (350, 1, 75),
        (399, 1, 75),
        (400, 2, 50),
        (749, 5, 50),
        (750, 5, 75),
        (1149, 9, 50),
        (1150, 9, 75),
        (5000, 9, 75),
    ],
)
def test_schedule_picks_the_longest_length_that_fits(days: int, increment: int, bank: int) -> None:
    schedule = schedule_for(days, date(2026, 1, 1))
    assert (schedule.increment_days, schedule.bank_days) == (increment, bank)
    assert schedule.length_days <= days


@pytest.mark.parametrize("days", [299, 0, -5])
def test_below_three_hundred_days_is_refused(days: int) -> None:
    with pytest.raises(ScheduleError, match="too short"):
        schedule_for(days, date(2026, 1, 1))


def test_schedule_error_is_a_value_error() -> None:
    assert issubclass(ScheduleError, ValueError)
    with pytest.raises(ScheduleError, match="whole number"):
        schedule_for(365.5, date(2026, 1, 1))  # type: ignore[arg-type]


def test_table_has_every_combination_with_distinct_lengths() -> None:
    table = schedule_table()
    assert len(table) == 18
    assert {(i, b) for i, b, _ in table} == {(i, b) for i in range(1, 10) for b in (50, 75)}
    lengths = [length for _, _, length in table]
    assert lengths == sorted(set(lengths))
    # "largest" by length is also the largest increment, then the largest bank
    assert [(i, b) for i, b, _ in table] == sorted((i, b) for i, b, _ in table)


def test_schedule_new_clock() -> None:
    clock = schedule_for(730, date(2026, 1, 1)).new_clock(guaranteed_time=True)
    assert clock.white.increment_s == 5 * DAY_S
    assert clock.black.bank_s == 50 * DAY_S
    assert clock.white.guaranteed_time


# TB-8 ---------------------------------------------------------------------------------------


def test_tb8_the_end_date_adjudicates_nothing() -> None:
    schedule = schedule_for(365, date(2026, 1, 1))
    clock = schedule.new_clock(guaranteed_time=True).start(0)
    end_s = (schedule.end - schedule.start).days * DAY_S
    # Both players keep moving, two days a move, past the end date (Guaranteed Time lets them):
    # nothing flags a game that still has time on its clock.
    now = 0
    while now <= end_s + 10 * DAY_S:
        now += 2 * DAY_S
        clock = clock.after_move(clock.to_move, now)
    assert now > end_s
    assert not clock.is_flagged(now)
    assert clock.flag_deadline() == now + clock.side(clock.to_move).clock_s


# TB-9 ---------------------------------------------------------------------------------------


def test_tb9_captain_refuels_a_member_being_replaced() -> None:
    clock = game(bank_days=75, at=0).captain_refuel(W, 40 * DAY_S, member_being_replaced=True)
    assert clock.white.clock_s == CLOCK_CAP_S
    assert clock.white.bank_s == 35 * DAY_S
    assert clock.flag_deadline() == 90 * DAY_S


def test_tb9_captain_cannot_refuel_a_member_who_is_not_being_replaced() -> None:
    start = game(bank_days=75, at=0)
    with pytest.raises(RefuelError, match="being replaced"):
        start.captain_refuel(W, 40 * DAY_S, member_being_replaced=False)


def test_tb9_captain_refuel_keeps_the_manual_refuel_limits() -> None:
    with pytest.raises(RefuelError, match="own turn"):
        game().captain_refuel(B, DAY_S, member_being_replaced=True)
    with pytest.raises(RefuelError, match="above"):
        game(bank_days=75, at=0).captain_refuel(W, DAY_S, member_being_replaced=True, amount_s=2 * DAY_S)
    with pytest.raises(RefuelError, match="shows zero"):
        game(at=0).captain_refuel(W, 50 * DAY_S, member_being_replaced=True)
