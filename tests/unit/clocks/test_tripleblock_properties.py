"""Property tests of the Triple Block invariants (TB-1, TB-2, TB-3, TB-6, TB-7)."""

from __future__ import annotations

from hypothesis import event, given
from hypothesis import strategies as st

from arbiter.clocks import (
    CLOCK_CAP_S,
    DAY_S,
    GUARANTEED_TIME_S,
    ClockError,
    RefuelError,
    TripleBlockClock,
    TripleBlockState,
)
from arbiter.vocabulary import Side


def blocks(min_clock_s: int = 0) -> st.SearchStrategy[TripleBlockState]:
    return st.builds(
        TripleBlockState,
        clock_s=st.integers(min_clock_s, CLOCK_CAP_S),
        bank_s=st.one_of(st.just(0), st.integers(0, 100 * DAY_S)),
        increment_s=st.integers(0, 9 * DAY_S),
        moves_made=st.integers(0, 120),
        guaranteed_time=st.booleans(),
    )


states = blocks()

thinks = st.one_of(st.integers(0, 2 * DAY_S), st.integers(0, 60 * DAY_S))
ops = st.lists(
    st.one_of(
        st.tuples(st.just("move"), thinks),
        st.tuples(st.just("refuel"), st.one_of(st.none(), st.integers(-DAY_S, 80 * DAY_S))),
    ),
    max_size=150,
)


def check_move(before: TripleBlockState, after: TripleBlockState) -> None:
    """The TB-2/TB-6 invariants of one completed move."""
    earned = before.increment_s if before.increment_applies else 0
    total_before = before.clock_s + before.bank_s
    total_after = after.clock_s + after.bank_s
    assert after.clock_s <= CLOCK_CAP_S
    assert after.moves_made == before.moves_made + 1
    if total_after == total_before + earned:
        return
    # Otherwise only a Guaranteed Time reset (TB-6) adds time, and only when it may:
    # option on, no increment earned, no bank left, under 3 days.
    assert before.guaranteed_time
    assert earned == 0
    assert after.bank_s == 0
    assert total_before < GUARANTEED_TIME_S
    assert after.clock_s == GUARANTEED_TIME_S


@given(states, ops)
def test_triple_block_invariants(state: TripleBlockState, operations: list[tuple]) -> None:
    for op, arg in operations:
        if op == "move":
            state = state.elapse(arg)
            if state.is_out_of_time:
                try:
                    state.after_move()
                except ClockError:
                    return
                raise AssertionError("a move on a zero clock was accepted")
            after = state.after_move()
            check_move(state, after)
            if after.clock_s + after.bank_s > state.clock_s + state.bank_s and not (
                state.increment_applies
            ):
                event("guaranteed time reset")
            state = after
        else:
            try:
                refuelled = state.manual_refuel(arg)
            except RefuelError:
                # refused only for an empty clock, a non-positive amount, more than the bank
                # holds, or more than fits under 50 days
                assert state.is_out_of_time or (
                    arg is not None
                    and (arg <= 0 or arg > state.bank_s or state.clock_s + arg > CLOCK_CAP_S)
                )
                continue
            assert not state.is_out_of_time  # never works on an empty clock
            assert refuelled.clock_s <= CLOCK_CAP_S  # never above 50 days
            assert refuelled.clock_s >= state.clock_s
            assert refuelled.clock_s + refuelled.bank_s == state.clock_s + state.bank_s
            state = refuelled
        assert 0 <= state.clock_s <= CLOCK_CAP_S
        assert state.bank_s >= 0


game_ops = st.lists(
    st.tuples(
        # weighted towards moves so that games get past move 50 (increment end, TB-6)
        st.sampled_from(
            ["move"] * 6 + ["refuel", "claim", "appeal", "escalate", "resolve", "wait"]
        ),
        st.one_of(st.integers(0, DAY_S), st.integers(0, 3 * DAY_S), st.integers(0, 40 * DAY_S)),
        st.booleans(),
    ),
    max_size=300,
)


initial_games = st.one_of(
    st.builds(
        lambda inc, bank, gt, first: TripleBlockClock.new(inc * DAY_S, bank * DAY_S, gt, first),
        st.integers(1, 9),
        st.sampled_from([50, 75]),
        st.booleans(),
        st.sampled_from(list(Side)),
    ),
    # mid-game positions, so that the end of the increment and TB-6 are reached
    st.builds(
        TripleBlockClock,
        white=blocks(min_clock_s=1),
        black=blocks(min_clock_s=1),
        to_move=st.sampled_from(list(Side)),
    ),
)


@given(initial_games, game_ops)
def test_game_clock_invariants(initial: TripleBlockClock, operations: list[tuple]) -> None:
    clock = initial.start(0)
    now = 0
    for op, dt, flag in operations:
        now += dt
        flagged = clock.flagged_side(now)
        if flagged is not None:
            if flagged is clock.to_move:
                deadline = clock.flag_deadline()
                assert deadline is None or deadline <= now
            else:
                # only a rejected claim or appeal charges the side not to move (TB-7)
                assert clock.side(flagged).clock_s == 0
            return
        deadline = clock.flag_deadline()
        if deadline is not None:
            # the ETL deadline is exact: not flagged one second before, flagged at it
            assert deadline > now
            assert not clock.is_flagged(deadline - 1)
            assert clock.is_flagged(deadline)
        side = clock.to_move if flag else clock.to_move.other
        totals = {s: clock.side(s).clock_s + clock.side(s).bank_s for s in Side}
        try:
            if op == "move":
                clock = clock.after_move(clock.to_move, now)
            elif op == "refuel":
                clock = clock.manual_refuel(side, now)
            elif op == "claim":
                clock = clock.file_claim(side, now)
            elif op == "appeal":
                clock = clock.file_appeal(side, now)
            elif op == "escalate":
                clock = clock.escalate_claim(now)
            elif op == "resolve":
                clock = clock.resolve_claim(now, upheld=flag)
        except ClockError:
            event(f"refused {op}")
            continue
        event(f"done {op}")
        if op == "move" and clock.side(clock.to_move.other).moves_made > 50:
            event("move past 50")
        for s in Side:
            assert 0 <= clock.side(s).clock_s <= CLOCK_CAP_S
            # a side's time grows only through its own move (increment or GT reset)
            if not (op == "move" and s is clock.to_move.other):
                assert clock.side(s).clock_s + clock.side(s).bank_s <= totals[s]
        # clocks run exactly when no claim or appeal is pending (TB-7)
        assert clock.is_running == (clock.claim is None)
