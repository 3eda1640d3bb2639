"""Clock maths: live Fischer clocks with the arena boost, and Triple Block correspondence clocks,
and the verdicts when time runs out or a player stays away.

Pure and stdlib-only. Live clocks count integer milliseconds, Triple Block clocks integer
seconds (TB: exact times, never rounded to days). Timestamps are whatever epoch the caller
uses, in the same unit.
"""

from arbiter.clocks.common import ClockError
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
from arbiter.clocks.verdict import (
    VERDICT_REASONS,
    Clock,
    Presence,
    Verdict,
    VerdictKind,
    decide,
    disconnect_deadline_ms,
    effective_ms,
    has_sat,
    next_deadline_ms,
)

__all__ = [
    "CLOCK_CAP_S",
    "DAY_S",
    "GUARANTEED_TIME_S",
    "INCREMENT_MOVES",
    "RECONNECT_WINDOW_MS",
    "VERDICT_REASONS",
    "Claim",
    "ClaimError",
    "ClaimKind",
    "Clock",
    "ClockError",
    "FischerClock",
    "Presence",
    "RefuelError",
    "Schedule",
    "ScheduleError",
    "SideClock",
    "Speed",
    "TimeControlError",
    "TripleBlockClock",
    "TripleBlockState",
    "Verdict",
    "VerdictKind",
    "boosted_time_control",
    "decide",
    "disconnect_deadline",
    "disconnect_deadline_ms",
    "effective_ms",
    "estimated_duration_s",
    "event_length_days",
    "has_sat",
    "next_deadline_ms",
    "schedule_for",
    "schedule_table",
    "speed_of",
]
