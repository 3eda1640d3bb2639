"""What the clock service writes back to Redis after a loss, from which stored copies (pure decisions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arbiter.clocks import Verdict, VerdictKind
from arbiter.vocabulary import Side, Termination
from services.clock import operations as ops
from services.clock.clocked_game import (
    ClockedGame,
    GameMeta,
    Kind,
    Status,
    StoredCopy,
    clocked_game_of,
    decode_early,
    encode_body,
    encode_early,
    game_deadline_ms,
    restore_of,
)
from services.clock.rebuild import Recovery, rebuild_plan, recovery_action

META = GameMeta(white_id="w", black_id="b", variant="international", kind=Kind.FISCHER, base_s=60, requested=True)
NOW = 1_800_000_000_000


def copy_of(record: ClockedGame, version: int = 7, left_ms: int | None = None) -> StoredCopy:
    """The copy PostgreSQL would hold of `record`."""
    return StoredCopy(record.game_id, version, encode_body(record), encode_early(record), left_ms)


def running(game_id: str = "g") -> ClockedGame:
    record = ClockedGame(game_id)
    ops.on_requested(record, META, NOW)
    ops.on_started(record, META, NOW, NOW)
    ops.apply_move(record, "w", 1, NOW + 2_000, NOW + 2_000)
    return record


def test_adopt_only_the_epoch_postgresql_names() -> None:
    assert recovery_action("e2", "e2") is Recovery.ADOPT  # another replica rebuilt it, or nothing was lost
    assert recovery_action(None, "e2") is Recovery.REBUILD  # Redis came back empty
    assert recovery_action("e1", "e2") is Recovery.REBUILD  # a rebuild that set its epoch but never committed
    assert recovery_action(None, "") is Recovery.REBUILD  # the first start on this database
    assert recovery_action("", "") is Recovery.REBUILD  # an empty epoch is never a state


def test_a_running_game_comes_back_with_its_next_deadline_and_no_expiry() -> None:
    record = running()
    entry = restore_of(copy_of(record))
    assert entry is not None
    assert (entry.game_id, entry.version, entry.body) == ("g", 7, encode_body(record))
    assert entry.deadline_ms == game_deadline_ms(record) == NOW + 2_000 + 60_000  # black runs since the move
    assert entry.ttl_ms is None and entry.early == ""


def test_a_decided_game_comes_back_due_at_its_verdict_so_the_poller_publishes_it() -> None:
    record = running()
    verdict = Verdict(VerdictKind.FLAGGED, Side.BLACK, Termination.NEVER_SAT, True, NOW + 62_000)
    record.status, record.verdict = Status.DECIDED, verdict
    ops.conclude(record, verdict.at_ms)
    entry = restore_of(copy_of(record))
    assert entry is not None and entry.deadline_ms == NOW + 62_000


def test_finished_and_waiting_games_come_back_without_a_deadline() -> None:
    over = running()
    ops.on_finished(over, NOW + 5_000, NOW + 5_000)
    requested = ClockedGame("r")
    ops.on_requested(requested, META, NOW)
    for record, left in ((over, 3_600_000), (requested, None)):
        entry = restore_of(copy_of(record, left_ms=left))
        assert entry is not None and entry.deadline_ms is None and entry.ttl_ms == left


def test_a_copy_redis_would_have_dropped_is_not_written_back() -> None:
    over = running()
    ops.on_finished(over, NOW + 5_000, NOW + 5_000)
    assert restore_of(copy_of(over, left_ms=0)) is None
    assert restore_of(copy_of(over, left_ms=-1)) is None
    kept = running("kept")
    assert [entry.game_id for entry in rebuild_plan([copy_of(over, left_ms=0), copy_of(kept)])] == ["kept"]


def test_moves_parked_before_the_start_come_back_with_the_game() -> None:
    record = ClockedGame("p")
    ops.apply_move(record, "w", 1, NOW + 1_000, NOW + 1_000)  # before any GameRequested: parked
    ops.apply_move(record, "b", 2, None, NOW + 2_000)
    assert record.status is Status.NEW
    stored = copy_of(record, left_ms=3_600_000)
    entry = restore_of(stored)
    assert entry is not None and entry.early == stored.early and entry.deadline_ms is None
    back = clocked_game_of(stored)
    assert back.version == "7" and back.early_moves == record.early_moves
    # The start applies them in order, as it would have without the loss.
    applied = ops.on_started(back, META, NOW, NOW + 3_000)
    assert [move.ply for move in applied] == [1, 2] and back.ply == 2


def test_a_started_game_keeps_no_parked_moves_in_its_copy() -> None:
    record = ClockedGame("s")
    ops.apply_move(record, "w", 1, NOW + 1_000, NOW + 1_000)
    ops.on_started(record, META, NOW, NOW + 2_000)
    assert record.status is Status.RUNNING and encode_early(record) == ""


@given(st.dictionaries(st.integers(1, 400), st.tuples(st.text(min_size=1, max_size=12),
                                                      st.none() | st.integers(0, 2**45)), max_size=20))
def test_parked_moves_round_trip(moves: dict[int, tuple[str, int | None]]) -> None:
    record = ClockedGame("rt")
    for ply, (player, at) in moves.items():
        ops.park_move(record, player, ply, at)
    assert decode_early(encode_early(record)) == record.early_moves
