"""The live Fischer clock and the arena boost (AR-5)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.clocks import ClockError, FischerClock, SideClock, TimeControlError, boosted_time_control
from arbiter.vocabulary import Side

W, B = Side.WHITE, Side.BLACK


def running(base_s: float = 180, inc_s: float = 2, at: int = 0, first: Side = W) -> FischerClock:
    return FischerClock.new(base_s, inc_s, first).start(at)


# AR-5 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_s", "inc_s", "boosted"),
    [
        (180, 2, (90, 0)),  # increment removed, base halved
        (60, 0, (30, 0)),  # exactly one minute: halved to the 30 s floor
        (75, 1, (37.5, 0)),  # exact halves, never rounded
        (59, 3, (59, 0)),  # under a minute: base kept, increment still removed
        (30, 0, (30, 0)),
        (0, 5, (0, 0)),
        (3600, 30, (1800, 0)),
    ],
)
def test_boosted_time_control(base_s: int, inc_s: int, boosted: tuple[float, float]) -> None:
    assert boosted_time_control(base_s, inc_s) == boosted


@given(st.integers(0, 100_000), st.integers(0, 600))
def test_boost_never_below_thirty_seconds_when_halved(base_s: int, inc_s: int) -> None:
    base, inc = boosted_time_control(base_s, inc_s)
    assert inc == 0
    assert base <= base_s
    if base_s >= 60:
        assert base >= 30
        assert base == base_s / 2
    else:
        assert base == base_s


def test_boost_refuses_negative_controls() -> None:
    with pytest.raises(TimeControlError):
        boosted_time_control(-1, 0)


# The clock ---------------------------------------------------------------------------------


def test_new_clock_is_not_running() -> None:
    clock = FischerClock.new(180, 2)
    assert not clock.is_running
    assert clock.flag_deadline() is None
    assert not clock.is_flagged(10**12)
    assert clock.remaining(W, 10**12) == 180_000


def test_clock_runs_from_the_start_for_the_first_mover() -> None:
    clock = running(at=1_000)
    assert clock.remaining(W, 11_000) == 170_000
    assert clock.remaining(B, 11_000) == 180_000
    assert clock.flag_deadline() == 181_000


def test_after_move_deducts_elapsed_and_adds_increment() -> None:
    clock = running(at=0).after_move(W, 5_000)
    assert clock.to_move is B
    assert clock.running_since_ms == 5_000
    assert clock.side(W).remaining_ms == 180_000 - 5_000 + 2_000
    assert clock.side(W).moves == 1
    clock = clock.after_move(B, 15_000)
    assert clock.side(B).remaining_ms == 180_000 - 10_000 + 2_000
    assert clock.flag_deadline() == 15_000 + 177_000


def test_black_first_for_variants_where_black_starts() -> None:
    clock = running(first=B, at=0)
    assert clock.remaining(B, 1_000) == 179_000
    with pytest.raises(ClockError, match="black's turn"):
        clock.after_move(W, 1_000)


def test_flag_at_the_deadline_and_not_before() -> None:
    clock = running(60, 0, at=0)
    deadline = clock.flag_deadline()
    assert deadline == 60_000
    assert not clock.is_flagged(deadline - 1)
    assert clock.is_flagged(deadline)
    assert clock.remaining(W, deadline + 5_000) == 0


def test_a_move_after_the_flag_is_refused() -> None:
    clock = running(60, 0, at=0)
    with pytest.raises(ClockError, match="too late"):
        clock.after_move(W, 60_000)
    assert clock.after_move(W, 59_999).side(W).remaining_ms == 1


def test_clock_errors() -> None:
    with pytest.raises(ClockError, match="not running"):
        FischerClock.new(60, 0).after_move(W, 0)
    with pytest.raises(ClockError, match="already running"):
        running().start(5)
    with pytest.raises(ClockError, match="backwards"):
        running(at=100).remaining(W, 50)
    with pytest.raises(TimeControlError):
        FischerClock.new(0, 0)


def test_stop_charges_the_side_to_move() -> None:
    clock = running(at=0).after_move(W, 1_000).stop(4_000)
    assert not clock.is_running
    assert clock.side(B).remaining_ms == 177_000
    assert clock.stop(99_000) == clock


def test_boost_before_the_start() -> None:
    clock = FischerClock.new(180, 2).boost(B, 0)
    assert clock.side(B).remaining_ms == 90_000
    assert clock.side(B).increment_ms == 0
    assert clock.side(B).boosted
    assert clock.side(W).remaining_ms == 180_000
    assert clock.side(W).increment_ms == 2_000
    # the boosted side no longer earns an increment
    clock = clock.start(0).after_move(W, 1_000).after_move(B, 3_000)
    assert clock.side(B).remaining_ms == 88_000


def test_boost_on_the_clock_keeps_time_already_used() -> None:
    clock = running(180, 2, at=0).boost(W, 10_000)
    assert clock.remaining(W, 10_000) == 180_000 - 10_000 - 90_000
    assert clock.flag_deadline() == 90_000


def test_boost_only_before_own_first_move_and_once() -> None:
    clock = running(at=0).after_move(W, 1_000)
    with pytest.raises(ClockError, match="first move"):
        clock.boost(W, 2_000)
    assert clock.boost(B, 2_000).side(B).boosted
    with pytest.raises(ClockError, match="already boosted"):
        clock.boost(B, 2_000).boost(B, 2_500)


def test_boost_that_would_empty_the_clock_is_refused() -> None:
    with pytest.raises(ClockError, match="empty"):
        running(60, 0, at=0).boost(W, 30_000)


def test_boost_without_halving_costs_only_the_increment() -> None:
    clock = FischerClock.new(45, 2).boost(W, 0)
    assert clock.side(W).remaining_ms == 45_000
    assert clock.side(W).increment_ms == 0


@given(
    st.integers(1, 600),
    st.integers(0, 30),
    st.lists(st.integers(0, 20_000), min_size=1, max_size=60),
)
def test_time_is_conserved(base_s: int, inc_s: int, thinks: list[int]) -> None:
    # Each move: the mover loses exactly what they thought and gains the increment; nothing else.
    clock = running(base_s, inc_s, at=0)
    now = 0
    for think in thinks:
        mover = clock.to_move
        before = clock.side(mover).remaining_ms
        now += think
        if think >= before:
            assert clock.is_flagged(now)
            with pytest.raises(ClockError):
                clock.after_move(mover, now)
            return
        assert clock.flag_deadline() == now - think + before
        clock = clock.after_move(mover, now)
        assert clock.side(mover).remaining_ms == before - think + inc_s * 1000
        assert clock.side(mover.other).remaining_ms >= 0


def _reference_after_move(clock: FischerClock, side: Side, now_ms: int) -> FischerClock:
    """The move rule written plainly (time used deducted, increment added, turn passed)."""
    state = clock.side(side)
    left = clock.remaining(side, now_ms)
    moved = replace(state, remaining_ms=left + state.increment_ms, moves=state.moves + 1)
    clock = replace(clock, white=moved) if side is W else replace(clock, black=moved)
    return replace(clock, to_move=side.other, running_since_ms=now_ms)


@given(
    st.integers(1, 600), st.integers(0, 30), st.sampled_from(Side), st.booleans(),
    st.lists(st.integers(0, 90_000), min_size=1, max_size=30),
)
def test_after_move_is_the_plain_rule(base_s: int, inc_s: int, first: Side, boost: bool, thinks: list[int]) -> None:
    clock = FischerClock.new(base_s, inc_s, first).start(0)
    if boost and base_s > 60:
        clock = clock.boost(first.other, 0)
    now = 0
    for think in thinks:
        now += think
        if clock.is_flagged(now):
            with pytest.raises(ClockError):
                clock.after_move(clock.to_move, now)
            return
        expected = _reference_after_move(clock, clock.to_move, now)
        clock = clock.after_move(clock.to_move, now)
        assert clock == expected and hash(clock) == hash(expected)
        assert type(clock.white) is SideClock and clock.flag_deadline() == now + clock.side(clock.to_move).remaining_ms


def test_after_move_refuses_time_going_backwards() -> None:
    clock = running(at=5_000)
    with pytest.raises(ClockError, match="backwards"):
        clock.after_move(W, 4_999)
