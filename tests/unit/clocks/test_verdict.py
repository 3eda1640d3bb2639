"""Verdicts when nobody moved in time: flags, drops, never-sat and both-absent (T-16..T-19, TB-4, TB-7, R-3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.clocks import (
    CLOCK_CAP_S,
    DAY_S,
    RECONNECT_WINDOW_MS,
    FischerClock,
    Presence,
    TripleBlockClock,
    TripleBlockState,
    Verdict,
    VerdictKind,
    decide,
    disconnect_deadline_ms,
    effective_ms,
    has_sat,
    next_deadline_ms,
)
from arbiter.clocks.verdict import clock_instant, flag_deadline_ms, flagged_side, instant_ms, switched_at_ms
from arbiter.vocabulary import Side, Termination

W, B = Side.WHITE, Side.BLACK
HERE = Presence(seen=True)


def live(base_s: float = 60, inc_s: float = 0, at: int = 0, first: Side = W) -> FischerClock:
    """A running Fischer clock started at `at` ms."""
    return FischerClock.new(base_s, inc_s, first).start(at)


def played(clock: FischerClock, *moves_at: int) -> FischerClock:
    """`clock` after moves at these instants (ms), sides alternating from the side to move."""
    for at in moves_at:
        clock = clock.after_move(clock.to_move, at)
    return clock


def correspondence(at_s: int = 0, increment_days: int = 1, bank_days: int = 50) -> TripleBlockClock:
    """A running Triple Block clock started at `at_s` seconds."""
    return TripleBlockClock.new(increment_days * DAY_S, bank_days * DAY_S).start(at_s)


def away(since_ms: int) -> Presence:
    """A player who was online and dropped at `since_ms`."""
    return Presence(seen=True, offline_since_ms=since_ms)


# -- time units -------------------------------------------------------------------------------------


def test_fischer_instants_are_milliseconds_and_triple_block_instants_whole_seconds() -> None:
    fischer, tb = live(at=1_234), correspondence(at_s=5)
    assert clock_instant(fischer, 61_999) == 61_999 and instant_ms(fischer, 7) == 7
    assert clock_instant(tb, 61_999) == 61 and instant_ms(tb, 7) == 7_000
    assert switched_at_ms(fischer) == 1_234 and switched_at_ms(tb) == 5_000
    assert switched_at_ms(fischer.stop(2_000)) is None and switched_at_ms(tb.stop(6)) is None


@pytest.mark.parametrize(
    ("at_ms", "now_ms", "expected"),
    [
        (None, 5_000, 5_000),  # no stamp: now
        (3_000, 5_000, 3_000),  # its own stamp
        (9_000, 5_000, 5_000),  # a stamp ahead of our clock: now
        (500, 5_000, 1_000),  # before the last switch (reordered in transit): the switch
        (1_000, 5_000, 1_000),
    ],
)
def test_an_event_takes_effect_at_its_stamp_between_the_last_switch_and_now(
    at_ms: int | None, now_ms: int, expected: int
) -> None:
    assert effective_ms(live(at=1_000), at_ms, now_ms) == expected


def test_without_a_running_clock_only_now_bounds_the_stamp() -> None:
    assert effective_ms(None, 500, 5_000) == 500
    assert effective_ms(live(at=1_000).stop(2_000), 500, 5_000) == 500
    assert effective_ms(correspondence(at_s=3), 2_500, 10_000) == 3_000


# -- who sat -----------------------------------------------------------------------------------


def test_a_side_sat_once_it_made_a_move() -> None:
    clock = live()
    assert not has_sat(None, W) and not has_sat(clock, W) and not has_sat(clock, B)
    clock = played(clock, 1_000)
    assert has_sat(clock, W) and not has_sat(clock, B)
    clock = played(clock, 2_000)
    assert has_sat(clock, B)
    tb = correspondence().after_move(W, 10)
    assert has_sat(tb, W) and not has_sat(tb, B)


# -- deadlines --------------------------------------------------------------------------------------


def test_flag_deadline_in_milliseconds_for_both_clocks() -> None:
    assert flag_deadline_ms(live(at=1_000)) == 61_000
    assert flag_deadline_ms(played(live(at=0), 10_000)) == 10_000 + 60_000
    assert flag_deadline_ms(live().stop(5)) is None
    assert flag_deadline_ms(correspondence(at_s=7)) == (7 + CLOCK_CAP_S) * 1000  # TB-4
    assert flag_deadline_ms(TripleBlockClock.new(DAY_S, 50 * DAY_S)) is None


def test_t17_a_drop_arms_thirty_seconds_only_after_the_players_first_move() -> None:
    clock = played(live(), 1_000)
    assert disconnect_deadline_ms(clock, W, None) is None, "online"
    assert disconnect_deadline_ms(clock, W, 5_000) == 5_000 + RECONNECT_WINDOW_MS == 35_000
    assert disconnect_deadline_ms(clock, B, 5_000) is None, "no move yet: the clock decides (T-16, T-17)"
    assert disconnect_deadline_ms(None, W, 5_000) is None


def test_a_correspondence_player_may_stay_away() -> None:
    tb = correspondence().after_move(W, 10)
    assert disconnect_deadline_ms(tb, W, 20_000) is None
    assert next_deadline_ms(tb, 20_000, 20_000) == flag_deadline_ms(tb)


def test_next_deadline_is_the_flag_while_everyone_is_online_or_has_not_moved() -> None:
    clock = live(at=1_000)
    assert next_deadline_ms(clock) == 61_000
    assert next_deadline_ms(clock, 2_000, 3_000) == 61_000, "drops before a first move arm nothing (T-17)"
    assert next_deadline_ms(clock.stop(2_000)) is None


def test_next_deadline_is_the_earliest_of_the_flag_and_the_drops() -> None:
    clock = played(live(), 1_000, 2_000)  # white to move from 2 s, flags at 61 s
    assert next_deadline_ms(clock, 5_000) == 35_000, "white dropped"
    assert next_deadline_ms(clock, None, 6_000) == 36_000, "black dropped"
    assert next_deadline_ms(clock, 9_000, 6_000) == 36_000, "both: the earlier"
    assert next_deadline_ms(clock, 40_000) == 61_000, "a drop expiring after the flag"
    # A stopped clock (game over) still has a drop pending for the caller to ignore or not.
    assert next_deadline_ms(clock.stop(3_000), 5_000) == 35_000


# -- verdicts: the clock (T-16, R-3, T-19) ---------------------------------------------------------


def test_nothing_is_due_before_a_deadline_and_the_flag_falls_exactly_at_it() -> None:
    clock = played(live(), 1_000, 2_000)
    assert decide(clock, 60_999, HERE, HERE) is None
    assert decide(clock, 61_000, HERE, HERE) == Verdict(VerdictKind.FLAGGED, W, Termination.TIME, False, 61_000)


def test_the_verdict_is_dated_at_the_deadline_not_when_it_was_looked_at() -> None:
    verdict = decide(played(live(), 1_000, 2_000), 75_000, HERE, HERE)
    assert verdict is not None and verdict.at_ms == 61_000


def test_t19_both_absent_when_the_first_mover_flags_and_the_second_never_connected() -> None:
    verdict = decide(live(), 60_000)
    assert verdict == Verdict(VerdictKind.ABANDONED, None, Termination.BOTH_ABSENT, True, 60_000)
    assert decide(live(), 60_000, HERE, Presence()) == verdict, "the first mover's presence does not matter"


def test_t16_a_second_mover_who_connected_wins_against_a_first_mover_who_never_sat() -> None:
    verdict = decide(live(), 60_000, Presence(), HERE)
    assert verdict == Verdict(VerdictKind.FLAGGED, W, Termination.NEVER_SAT, True, 60_000)  # unrated
    # Connected then dropped still counts as connected (T-17: before a move only the clock decides).
    assert decide(live(), 60_000, Presence(), away(100)) == verdict


def test_black_moves_first_in_some_variants_and_the_rules_follow_the_side_to_move() -> None:
    clock = live(first=B)
    assert decide(clock, 60_000, HERE, Presence()) == Verdict(
        VerdictKind.FLAGGED, B, Termination.NEVER_SAT, True, 60_000
    )
    assert decide(clock, 60_000) == Verdict(VerdictKind.ABANDONED, None, Termination.BOTH_ABSENT, True, 60_000)


def test_a_second_mover_who_never_moves_loses_never_sat_even_if_never_seen() -> None:
    clock = played(live(), 1_000)  # black to move from 1 s
    verdict = decide(clock, 61_000)
    assert verdict == Verdict(VerdictKind.FLAGGED, B, Termination.NEVER_SAT, True, 61_000)


def test_a_player_who_sat_loses_on_time_and_the_game_stays_rated() -> None:
    clock = played(live(), 1_000, 2_000, 3_000)  # black to move from 3 s with 59 s left
    verdict = decide(clock, 62_000, HERE, HERE)
    assert verdict == Verdict(VerdictKind.FLAGGED, B, Termination.TIME, False, 62_000)


def test_a_stopped_clock_decides_nothing() -> None:
    assert decide(live().stop(1_000), 10**9) is None
    assert decide(TripleBlockClock.new(DAY_S, 50 * DAY_S), 10**12) is None


# -- verdicts: drops (T-17) -------------------------------------------------------------------------


def test_t17_back_within_thirty_seconds_or_lost_by_disconnection() -> None:
    clock = played(live(), 1_000)  # white sat, black to move until 61 s
    assert decide(clock, 31_999, away(2_000), HERE) is None
    verdict = decide(clock, 32_000, away(2_000), HERE)
    assert verdict == Verdict(VerdictKind.FLAGGED, W, Termination.DISCONNECTION, False, 32_000)


def test_a_drop_before_the_first_move_never_loses_by_disconnection() -> None:
    clock = played(live(), 1_000)  # black to move, has not moved, dropped at 2 s
    assert decide(clock, 50_000, HERE, away(2_000)) is None
    verdict = decide(clock, 61_000, HERE, away(2_000))
    assert verdict is not None and verdict.reason is Termination.NEVER_SAT and verdict.loser is B


def test_the_earliest_deadline_decides() -> None:
    clock = played(live(), 1_000, 2_000)  # white to move, flags at 61 s
    drop_first = decide(clock, 90_000, HERE, away(10_000))
    assert drop_first == Verdict(VerdictKind.FLAGGED, B, Termination.DISCONNECTION, False, 40_000)
    flag_first = decide(clock, 120_000, HERE, away(40_000))
    assert flag_first == Verdict(VerdictKind.FLAGGED, W, Termination.TIME, False, 61_000)
    both_dropped = decide(clock, 90_000, away(5_000), away(4_000))
    assert both_dropped is not None and both_dropped.loser is B and both_dropped.at_ms == 34_000


def test_at_the_same_instant_the_flag_comes_before_the_drop() -> None:
    clock = played(live(), 1_000)  # black to move, flags at 61 s; white sat
    verdict = decide(clock, 61_000, away(31_000), HERE)  # white's 30 s also end at 61 s
    assert verdict == Verdict(VerdictKind.FLAGGED, B, Termination.NEVER_SAT, True, 61_000)


def test_two_drops_at_the_same_instant_white_first() -> None:
    clock = played(live(), 1_000, 2_000)
    verdict = decide(clock, 40_000, away(5_000), away(5_000))
    assert verdict is not None and verdict.loser is W and verdict.reason is Termination.DISCONNECTION


# -- verdicts: Triple Block (TB-4, TB-7) ------------------------------------------------------------


def test_tb4_a_correspondence_clock_at_zero_loses_on_time_in_whole_seconds() -> None:
    tb = correspondence(at_s=0).after_move(W, 100).after_move(B, 200)  # white to move from 200 s
    deadline_s = 200 + tb.white.clock_s
    assert decide(tb, deadline_s * 1000 - 1, HERE, HERE) is None
    verdict = decide(tb, deadline_s * 1000 + 999, away(0), away(0))
    assert verdict == Verdict(VerdictKind.FLAGGED, W, Termination.TIME, False, deadline_s * 1000)


def test_tb4_a_correspondence_player_who_never_moved_loses_on_time_whoever_connected() -> None:
    # T-19's "both absent" is a round game's rule: a correspondence opponent cannot move before the
    # first mover and need not connect, so the empty clock loses (TB-4), unrated.
    tb = correspondence()
    lost = Verdict(VerdictKind.FLAGGED, W, Termination.NEVER_SAT, True, CLOCK_CAP_S * 1000)
    assert decide(tb, CLOCK_CAP_S * 1000) == lost
    assert decide(tb, CLOCK_CAP_S * 1000, Presence(), HERE) == lost
    assert decide(tb, CLOCK_CAP_S * 1000, HERE, Presence()) == lost


def test_t19_still_abandons_a_live_game_neither_player_came_to() -> None:
    clock = live()
    deadline = flag_deadline_ms(clock)
    assert deadline is not None
    assert decide(clock, deadline) == Verdict(VerdictKind.ABANDONED, None, Termination.BOTH_ABSENT, True, deadline)


def test_tb7_a_rejected_appeal_can_empty_the_clock_of_the_side_not_to_move() -> None:
    tb = TripleBlockClock(
        white=TripleBlockState(100, 0, 0, moves_made=1), black=TripleBlockState(CLOCK_CAP_S, 0, 0, moves_made=1),
        to_move=B, running_since_s=0,
    )
    charged = tb.file_appeal(W, 10).resolve_claim(200, upheld=False)  # white charged 190 s of 100
    assert flagged_side(charged, 200_000) is W
    # It lost when the clocks restarted, whenever the deadline is looked at.
    assert decide(charged, 200_500, HERE, HERE) == Verdict(VerdictKind.FLAGGED, W, Termination.TIME, False, 200_000)
    # Due when the clocks restart, not when black's full clock would run out (TB-4).
    assert flag_deadline_ms(charged) == 200_000
    assert next_deadline_ms(charged) == 200_000
    # Black never moving afterwards does not make black the loser: white ran out first.
    black_out_ms = (200 + CLOCK_CAP_S) * 1000
    assert flagged_side(charged, black_out_ms) is W
    assert decide(charged, black_out_ms, HERE, HERE) == Verdict(
        VerdictKind.FLAGGED, W, Termination.TIME, False, 200_000)


def test_every_termination_is_one_of_the_contracts_and_back() -> None:
    from arbiter.contracts import common_pb2 as common
    from arbiter.kit.convert import TERMINATION, TERMINATION_TO_PROTO

    for termination in Termination:
        assert TERMINATION_TO_PROTO[termination] == common.Termination.Value(f"TERMINATION_{termination.name}")
    assert set(TERMINATION) == set(common.Termination.values()) - {common.TERMINATION_UNSPECIFIED}
    assert {TERMINATION[TERMINATION_TO_PROTO[t]] for t in Termination} == set(Termination)


# -- properties -------------------------------------------------------------------------------------

# A live game: think times (ms) of alternating moves, presence of each side, and a look-up instant.
thinks = st.lists(st.integers(0, 70_000), max_size=12)
presences = st.builds(
    Presence, seen=st.booleans(), offline_since_ms=st.one_of(st.none(), st.integers(0, 1_000_000))
)


def _game(base_s: int, inc_s: int, first: Side, think_ms: list[int]) -> FischerClock:
    """The clock after the moves that came in time (a move after the flag is not made)."""
    clock = FischerClock.new(base_s, inc_s, first).start(0)
    at = 0
    for think in think_ms:
        at += think
        if clock.is_flagged(at):
            break
        clock = clock.after_move(clock.to_move, at)
    return clock


games = st.builds(_game, st.integers(1, 120), st.integers(0, 10), st.sampled_from(Side), thinks)


@given(games, presences, presences, st.integers(0, 2_000_000))
def test_a_verdict_is_due_exactly_from_the_next_deadline_and_is_dated_there(
    clock: FischerClock, white: Presence, black: Presence, later_ms: int
) -> None:
    deadline = next_deadline_ms(clock, white.offline_since_ms, black.offline_since_ms)
    now = (clock.running_since_ms or 0) + later_ms
    verdict = decide(clock, now, white, black)
    assert (verdict is not None) == (deadline is not None and deadline <= now)
    if verdict is not None:
        assert verdict.at_ms == deadline <= now
        assert decide(clock, now + 12_345, white, black) == verdict, "a verdict, once due, stays the same"


@given(games, presences, presences, st.integers(0, 2_000_000))
def test_verdicts_follow_r3_t17_t19(clock: FischerClock, white: Presence, black: Presence, later_ms: int) -> None:
    verdict = decide(clock, (clock.running_since_ms or 0) + later_ms, white, black)
    if verdict is None:
        return
    if verdict.kind is VerdictKind.ABANDONED:
        # T-19: nobody moved, and the player who was not to move never showed up.
        assert verdict.loser is None and verdict.reason is Termination.BOTH_ABSENT and verdict.loser_never_sat
        assert not has_sat(clock, W) and not has_sat(clock, B)
        assert not (black if clock.to_move is W else white).seen
        return
    assert verdict.loser is not None
    assert verdict.loser_never_sat == (not has_sat(clock, verdict.loser))
    if verdict.reason is Termination.DISCONNECTION:
        assert has_sat(clock, verdict.loser), "T-17: only after a first move"
    elif verdict.reason is Termination.TIME:
        assert has_sat(clock, verdict.loser) and verdict.loser is clock.to_move
    else:
        assert verdict.reason is Termination.NEVER_SAT and verdict.loser is clock.to_move


@given(games, st.integers(0, 2_000_000))
def test_online_players_only_ever_lose_on_the_clock(clock: FischerClock, later_ms: int) -> None:
    now = (clock.running_since_ms or 0) + later_ms
    verdict = decide(clock, now, HERE, HERE)
    assert next_deadline_ms(clock) == clock.flag_deadline()
    assert (verdict is None) == (now < (clock.flag_deadline() or 0))
    assert verdict is None or (verdict.loser is clock.to_move and verdict.reason is not Termination.DISCONNECTION)


@given(
    st.integers(1, 9), st.sampled_from((50, 75)), st.lists(st.integers(0, 40 * DAY_S), max_size=8),
    presences, presences, st.integers(0, 120 * DAY_S),
)
def test_triple_block_deadlines_are_whole_seconds_and_presence_never_decides(
    increment_days: int, bank_days: int, think_s: list[int], white: Presence, black: Presence, later_s: int
) -> None:
    tb = correspondence(0, increment_days, bank_days)
    at = 0
    for think in think_s:
        if (at + think) * 1000 >= flag_deadline_ms(tb):
            break  # the mover's time ran out first (TB-4): the game has no more moves
        at += think
        tb = tb.after_move(tb.to_move, at)
    deadline = next_deadline_ms(tb, white.offline_since_ms, black.offline_since_ms)
    assert deadline is not None and deadline % 1000 == 0 and deadline == flag_deadline_ms(tb)
    now = (at + later_s) * 1000
    verdict = decide(tb, now, white, black)
    assert (verdict is not None) == (deadline <= now)
    assert verdict is None or verdict.reason is not Termination.DISCONNECTION
