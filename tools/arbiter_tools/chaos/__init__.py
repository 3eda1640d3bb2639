"""The chaos suite's means (`make chaos`): faults injected, events delivered again, outcomes compared.

- `faults`: what goes wrong (service kills, pauses, Redis flushed or killed, PostgreSQL stormed or
  restarted, the broker killed, poison records), counted in `FaultCounts` for the suite's figures.
- `redelivery`: every event delivered again (fresh consumer groups, offset rewinds, a shuffled
  replay) and the topics read back.
- `comparison`: what was published checked against the pure rules, and table snapshots compared.
- `watchers`: a crowd of Watch streams held on the competitions while the faults land.

The names below are the package's surface; import them from `arbiter_tools.chaos`.
"""

from arbiter_tools.chaos.comparison import (
    SET_ASIDE_TABLES,
    Recorded,
    arena_leaderboard,
    expected_ratings,
    game_differences,
    rating_differences,
    set_aside_differences,
    snapshot_differences,
    snapshot_tables,
    tournament_points,
)
from arbiter_tools.chaos.faults import (
    FaultCounts,
    KillDriver,
    PrivatePostgres,
    connection_storm,
    consumed_topics,
    flush_redis,
    kill_broker,
    kill_redis,
    paused,
    poison_every_consumed_topic,
    restart_postgres,
    resume,
    suspend,
)
from arbiter_tools.chaos.redelivery import (
    SERVICE_GROUPS,
    commit_at_ends,
    group_lag,
    group_prefix,
    read_raw,
    read_topic,
    redeliver_in_order,
    replay_shuffled,
    rewind_group,
    rewind_service,
    true_ends,
    wait_caught_up,
)
from arbiter_tools.chaos.watchers import Watched, WatcherCrowd

__all__ = [
    "FaultCounts", "KillDriver", "PrivatePostgres", "Recorded", "SERVICE_GROUPS", "SET_ASIDE_TABLES", "Watched",
    "WatcherCrowd", "arena_leaderboard", "commit_at_ends", "connection_storm", "consumed_topics",
    "expected_ratings", "flush_redis", "game_differences", "group_lag", "group_prefix", "kill_broker",
    "kill_redis", "paused", "poison_every_consumed_topic", "rating_differences", "read_raw", "read_topic",
    "redeliver_in_order", "replay_shuffled", "restart_postgres", "resume", "rewind_group", "rewind_service",
    "set_aside_differences", "snapshot_differences", "snapshot_tables", "suspend", "tournament_points",
    "true_ends", "wait_caught_up",
]
