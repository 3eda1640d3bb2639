"""Clock maths: live Fischer clocks with the arena boost, and Triple Block correspondence clocks.

Pure and stdlib-only. Live clocks count integer milliseconds, Triple Block clocks integer
seconds (TB: exact times, never rounded to days). Timestamps are whatever epoch the caller
uses, in the same unit.
"""

from arbiter.clocks.common import ClockError, Side
from arbiter.clocks.fischer import FischerClock, SideClock, boosted_time_control
from arbiter.clocks.presence import RECONNECT_WINDOW_MS, disconnect_deadline
from arbiter.clocks.speed import Speed, TimeControlError, estimated_duration_s, speed_of
from arbiter.clocks.tripleblock import (
    CLOCK_CAP_S,
    DAY_S,
    GUARANTEED_TIME_S,
    INCREMENT_MOVES,
    Claim,
    ClaimError,
    ClaimKind,
    RefuelError,
    Schedule,
    ScheduleError,
    TripleBlockClock,
    TripleBlockState,
    event_length_days,
    schedule_for,
    schedule_table,
)

__all__ = [
    "CLOCK_CAP_S",
    "DAY_S",
    "GUARANTEED_TIME_S",
    "INCREMENT_MOVES",
    "RECONNECT_WINDOW_MS",
    "Claim",
    "ClaimError",
    "ClaimKind",
    "ClockError",
    "FischerClock",
    "RefuelError",
    "Schedule",
    "ScheduleError",
    "Side",
    "SideClock",
    "Speed",
    "TimeControlError",
    "TripleBlockClock",
    "TripleBlockState",
    "boosted_time_control",
    "disconnect_deadline",
    "estimated_duration_s",
    "event_length_days",
    "schedule_for",
    "schedule_table",
    "speed_of",
]
