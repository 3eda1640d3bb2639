"""The clock service's records in memory: events applied, verdicts through the record, stored form (no I/O).

The verdict rules themselves are unit-tested in tests/unit/clocks/test_verdict.py; these check
that a record hands its clock and presence facts to them as the events left them.
"""

from __future__ import annotations

from arbiter.clocks import VerdictKind
from arbiter.vocabulary import Side, Termination
from services.clock import operations as ops
from services.clock.clocked_game import (
    ClockedGame,
    GameMeta,
    Kind,
    Status,
    decode_body,
    encode_body,
    game_deadline_ms,
    game_verdict,
)
from services.clock.convert import clock_state

LIVE = GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=60, increment_s=2, requested=True,
                boost_allowed=True)


def started(meta: GameMeta = LIVE) -> ClockedGame:
    record = ClockedGame("g")
    ops.on_started(record, meta, 0, 0)
    return record


def test_t19_first_mover_flags_before_any_move_and_second_never_connected() -> None:
    verdict = game_verdict(started(), 60_000)
    assert verdict is not None and verdict.kind is VerdictKind.ABANDONED and verdict.reason == Termination.BOTH_ABSENT
    assert game_verdict(started(), 59_999) is None


def test_second_mover_present_wins_against_a_first_mover_who_never_sat() -> None:
    record = started()
    ops.on_presence(record, "b", True, 10, 10)
    verdict = game_verdict(record, 60_000)
    assert verdict is not None and verdict.loser is Side.WHITE
    assert verdict.reason == Termination.NEVER_SAT and verdict.loser_never_sat


def test_second_mover_who_never_moves_loses_never_sat_and_a_mover_loses_on_time() -> None:
    record = started()
    assert ops.apply_move(record, "w", 1, 1_000, 1_000) == "applied"
    verdict = game_verdict(record, 61_000)
    assert verdict is not None and verdict.loser is Side.BLACK and verdict.reason == Termination.NEVER_SAT
    assert ops.apply_move(record, "b", 2, 2_000, 2_000) == "applied"
    verdict = game_verdict(record, 2_000 + 61_000)
    assert verdict is not None and verdict.loser is Side.WHITE and verdict.reason == Termination.TIME
    assert not verdict.loser_never_sat


def test_t17_deadline_only_after_the_first_move_and_a_late_return_changes_nothing() -> None:
    record = started()
    ops.on_presence(record, "w", False, 500, 500)
    assert game_deadline_ms(record) == 60_000, "before the first move the clock decides (T-17)"
    ops.on_presence(record, "w", True, 700, 700)
    ops.apply_move(record, "w", 1, 1_000, 1_000)
    ops.on_presence(record, "w", False, 2_000, 2_000)
    assert game_deadline_ms(record) == 32_000
    assert ops.on_presence(record, "w", True, 32_500, 32_500) == "too_late"
    verdict = game_verdict(record, 32_500)
    assert verdict is not None and verdict.reason == Termination.DISCONNECTION and verdict.loser is Side.WHITE


def test_t17_a_move_after_the_30_seconds_does_not_bring_the_player_back() -> None:
    """A move that reaches the clock late (its flags held back after a restart) leaves the loss standing."""
    record = started()
    assert ops.apply_move(record, "w", 1, 1_000, 1_000) == "applied"
    assert ops.apply_move(record, "b", 2, 1_500, 1_500) == "applied"
    ops.on_presence(record, "w", False, 2_000, 2_000)
    assert ops.apply_move(record, "w", 3, 32_000, 40_000) == "late"
    assert record.ply == 2 and record.offline_since_ms(Side.WHITE) == 2_000
    verdict = game_verdict(record, 40_000)
    assert verdict is not None and verdict.reason == Termination.DISCONNECTION and verdict.loser is Side.WHITE
    # Back in time, the move counts and the player is online again.
    again = started()
    ops.apply_move(again, "w", 1, 1_000, 1_000)
    ops.apply_move(again, "b", 2, 1_500, 1_500)
    ops.on_presence(again, "w", False, 2_000, 2_000)
    assert ops.apply_move(again, "w", 3, 31_999, 40_000) == "applied"
    assert again.offline_since_ms(Side.WHITE) is None and game_verdict(again, 40_000) is None


def test_events_before_the_players_are_known_are_kept_by_player() -> None:
    record = ClockedGame("g")
    assert ops.on_presence(record, "b", True, 0, 0) == "handled"
    assert ops.boost(record, "b", 10, 10) == "parked"
    assert ops.apply_move(record, "w", 1, 20, 20) == "parked"
    applied = ops.on_started(record, GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=180), 0, 30)
    # The parked boost's state first (AR-5), then the early move's, which the play site is sent.
    assert [(a.ply, a.cause) for a in applied] == [(0, "boost"), (1, "")]
    assert record.status is Status.RUNNING and record.ply == 1 and record.presence[Side.BLACK].seen
    assert record.clock is not None and record.clock.black.boosted and record.clock.black.remaining_ms == 90_000


def test_a_boost_the_clock_applies_is_published_and_one_it_refuses_is_not() -> None:
    record = started()
    assert ops.boost_published(record, "b", 100, 100) == ("applied", [ops.AppliedMove(0, 100, "boost-black")])
    assert ops.boost_published(record, "b", 200, 200) == ("refused", [])  # once only
    ops.apply_move(record, "w", 1, 1_000, 1_000)
    assert ops.boost_published(record, "w", 1_500, 1_500) == ("after_first_move", [])


def test_a_boost_applied_on_a_reloaded_copy_is_stated_from_its_last_switch() -> None:
    """A retry reloads a game a move reached meanwhile: the handler's `now` is then before the switch."""
    record = started()
    ops.apply_move(record, "w", 1, 1_000, 1_000)
    outcome, applied = ops.boost_published(record, "b", 900, 900)
    assert outcome == "applied" and applied == [ops.AppliedMove(1, 1_000, "boost-black")]
    state = clock_state(record, applied[0].at_ms, 900, cause=applied[0].cause)
    assert state.black_boosted and state.black_remaining_ms == 30_000


def test_stale_and_foreign_moves_change_nothing() -> None:
    record = started()
    ops.apply_move(record, "w", 1, 1_000, 1_000)
    clock = record.clock
    assert ops.apply_move(record, "w", 1, 1_500, 1_500) == "stale"
    assert ops.apply_move(record, "x", 2, 1_500, 1_500) == "not_a_player"
    assert ops.apply_move(record, "w", 2, 1_500, 1_500) == "wrong_turn"
    assert record.clock == clock and record.ply == 1


def test_record_round_trips_through_its_stored_form() -> None:
    record = started(GameMeta(white_id="w", black_id="b", kind=Kind.TRIPLE_BLOCK, tb_increment_days=1,
                              tb_bank_days=50, guaranteed_time=True))
    ops.apply_move(record, "w", 1, 86_400_000, 86_400_000)
    ops.on_presence(record, "b", False, 5, 5)
    back = decode_body("g", "3", encode_body(record), {})
    assert (back.clock, back.ply, back.meta, back.status, back.version) == (
        record.clock, record.ply, record.meta, record.status, "3")
    assert back.presence[Side.BLACK].offline_since_ms == 5


def test_the_fast_encoding_is_what_the_json_encoder_writes() -> None:
    record = started()
    ops.apply_move(record, "w", 1, 1_000, 1_000)
    ops.on_presence(record, "b", False, 77, 90)
    fast = encode_body(record)
    record.claim_reason = "the general path"
    general = encode_body(record)
    assert fast == general.replace('"the general path"', '""')


def test_nothing_is_decided_nor_due_unless_the_game_runs() -> None:
    record = ClockedGame("g")
    assert game_verdict(record, 10**12) is None and game_deadline_ms(record) is None
    record = started()
    ops.on_finished(record, 1_000, 1_000)
    assert game_verdict(record, 10**12) is None and game_deadline_ms(record) is None


def test_a_decided_record_keeps_its_verdict_through_the_stored_form() -> None:
    record = started()
    verdict = game_verdict(record, 60_000)
    assert verdict is not None
    record.status, record.verdict = Status.DECIDED, verdict
    back = decode_body("g", "1", encode_body(record), {})
    assert back.verdict == verdict and back.verdict.reason is Termination.BOTH_ABSENT


def test_a_stored_control_the_rules_now_refuse_leaves_the_game_waiting_not_failing() -> None:
    """Stored before TB-5 was checked: starting it must not raise on every delivery of its events."""
    record = ClockedGame("g")
    meta = GameMeta(white_id="w", black_id="b", kind=Kind.TRIPLE_BLOCK, tb_increment_days=0, tb_bank_days=50)
    assert ops.on_started(record, meta, 0, 10) == []
    assert record.status is Status.WAITING and record.clock is None and game_deadline_ms(record) is None
