"""R-6 speed classification and T-17 presence deadline."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.clocks import (
    RECONNECT_WINDOW_MS,
    Speed,
    TimeControlError,
    boosted_time_control,
    disconnect_deadline,
    estimated_duration_s,
    speed_of,
)


@pytest.mark.parametrize(
    ("base_s", "inc_s", "speed"),
    [
        (60, 0, Speed.BULLET),
        (60, 1, Speed.BULLET),  # 100 s
        (120, 1, Speed.BULLET),  # 160 s
        (179, 0, Speed.BULLET),
        (180, 0, Speed.BLITZ),  # "under 3 minutes" is bullet, 3:00 is blitz
        (120, 2, Speed.BLITZ),  # 200 s
        (180, 2, Speed.BLITZ),  # 260 s
        (300, 3, Speed.BLITZ),  # 420 s
        (479, 0, Speed.BLITZ),
        (480, 0, Speed.RAPID),
        (600, 0, Speed.RAPID),
        (600, 5, Speed.RAPID),  # 800 s
        (900, 10, Speed.RAPID),  # 1300 s
        (1499, 0, Speed.RAPID),
        (1500, 0, Speed.CLASSICAL),
        (1800, 0, Speed.CLASSICAL),
        (900, 15, Speed.CLASSICAL),  # 1500 s
        (0, 4, Speed.BULLET),  # 160 s
        (0, 5, Speed.BLITZ),  # 200 s
    ],
)
def test_speed_of_boundaries(base_s: int, inc_s: int, speed: Speed) -> None:
    assert speed_of(base_s, inc_s) is speed


def test_speed_counts_forty_increments() -> None:
    assert estimated_duration_s(0, 5) == 200
    assert estimated_duration_s(180, 2) == 260


def test_negative_time_control_is_refused() -> None:
    with pytest.raises(TimeControlError):
        speed_of(-1, 0)
    with pytest.raises(TimeControlError):
        speed_of(60, -1)


@given(st.integers(0, 10_000), st.integers(0, 180))
def test_boosted_game_keeps_the_arena_speed(base_s: int, inc_s: int) -> None:
    # R-6/AR-5: the speed comes from the arena's control; boosting must not be fed to speed_of,
    # and the boosted control is never slower than the original.
    boosted_base, boosted_inc = boosted_time_control(base_s, inc_s)
    assert estimated_duration_s(boosted_base, boosted_inc) <= estimated_duration_s(base_s, inc_s)


def test_speed_is_a_metric_label() -> None:
    assert [s.value for s in Speed] == ["bullet", "blitz", "rapid", "classical", "correspondence"]


def test_no_reconnection_deadline_before_the_first_move() -> None:
    # T-17: before the first move only the clock decides (T-16).
    assert disconnect_deadline(1_000, has_moved=False) is None


def test_thirty_seconds_to_come_back_after_the_first_move() -> None:
    assert RECONNECT_WINDOW_MS == 30_000
    assert disconnect_deadline(1_000, has_moved=True) == 31_000
