"""The move path's ClockState bytes (no I/O): the reused-message encoder writes what `clock_state` builds.

The move consumer serialises a batch's states with `StateEncoder` (one message filled in place)
instead of a new ClockState per move; consumers must not see the difference, byte for byte.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contracts import events_pb2 as ev
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind
from services.clock.convert import StateEncoder, clock_state, encoded_state

LIVE = GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=60, increment_s=2)
CORRESPONDENCE = GameMeta(white_id="w", black_id="b", kind=Kind.TRIPLE_BLOCK, tb_increment_days=1, tb_bank_days=50)


def reference(record: ClockedGame, now_ms: int) -> tuple[bytes, bytes, bytes, bytes]:
    """What the publisher sent before the encoder: a fresh ClockState at the last switch."""
    return encoded_state(clock_state(record, ops.game_switch_ms(record), now_ms))


@settings(max_examples=60, deadline=None)
@given(
    started_at=st.integers(0, 2_000_000_000_000),
    gaps=st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
    now_offset=st.integers(0, 10_000_000),
    game_id=st.text(min_size=1, max_size=20),
    boosts=st.sets(st.sampled_from(["w", "b"])),
)
def test_the_encoder_writes_the_bytes_clock_state_gives(
    started_at: int, gaps: list[int], now_offset: int, game_id: str, boosts: set[str]
) -> None:
    record = ClockedGame(game_id)
    ops.on_started(record, LIVE, started_at, started_at)
    for player in sorted(boosts):  # AR-5: the boosted flags travel in every state
        assert ops.boost(record, player, started_at, started_at) == "applied"
    at = started_at
    now = started_at + sum(gaps) + now_offset
    encoder = StateEncoder(now)
    for ply, gap in enumerate(gaps, start=1):
        at += gap
        outcome = ops.apply_move(record, "w" if ply % 2 else "b", ply, at, now)
        if outcome != "applied":
            break
        # One encoder serves a whole batch: every state is whole, nothing is left from the previous one.
        assert encoder.after_move(record) == reference(record, now)
        key, value, event_id, trace_id = encoder.after_move(record, "site-game-1")
        state = ev.ClockState.FromString(value)
        assert (key, event_id, trace_id) == (game_id.encode(), f"state:{game_id}:{ply}".encode(), b"site-game-1")
        assert state.meta.trace_id == "site-game-1"
        assert state.ply == ply and state.server_time.ToMilliseconds() == at
        assert (state.white_boosted, state.black_boosted) == ("w" in boosts, "b" in boosts)


def test_zero_fields_and_a_triple_block_clock_come_out_as_clock_state_writes_them() -> None:
    # A switch and a batch on whole seconds (nanos 0), a clock without increment.
    record = ClockedGame("g")
    ops.on_started(record, GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=2), 0, 0)
    encoder = StateEncoder(5_000)
    assert ops.apply_move(record, "w", 1, 1_000, 5_000) == "applied"
    assert encoder.after_move(record) == reference(record, 5_000)

    correspondence = ClockedGame("tb")
    ops.on_started(correspondence, CORRESPONDENCE, 0, 0)
    assert ops.apply_move(correspondence, "w", 1, 3_600_000, 3_600_000) == "applied"
    assert encoder.after_move(correspondence) == reference(correspondence, 5_000)
    assert ev.ClockState.FromString(encoder.after_move(correspondence)[1]).white_bank_ms > 0
