"""Settings of the arena service, from environment variables."""

from __future__ import annotations

from pydantic import Field

from arbiter.kit.settings import WatchSettings


class ArenaSettings(WatchSettings):
    """The arena service's settings; the kit's fields (with Watch limits) plus its own defaults."""

    grpc_port: int = 50053
    metrics_port: int = 9103
    rating_grpc_addr: str = Field(default="", description="host:port of the RatingService; empty pairs by rank only")
    # Deadline of one GetRatings call, in real seconds; a slow rating service must not stall pairing.
    rating_timeout_seconds: float = Field(default=0.5, gt=0)
    # After a failed rating call, pair by rank only for this many real seconds before trying again.
    rating_retry_seconds: float = Field(default=10.0, gt=0)
    # Ownership of one arena's pairing (a Redis lease per arena), in real seconds: a dead owner's
    # arenas are taken over within about lease_seconds + lease_renew_seconds.
    lease_seconds: float = Field(default=3.0, gt=0)
    lease_renew_seconds: float = Field(default=0.5, gt=0)
    # An owned arena is re-paired at least this often (real seconds), for AR-3 cooldowns running out.
    tick_seconds: float = Field(default=0.25, gt=0)
    # Redis connections of the matchmaker (leases, passes, wakes; its wake listener keeps one), a pool of
    # its own: neither the calls nor the result consumer can take them.
    redis_matchmaker_connections: int = Field(default=20, ge=2)
    # Events per batch from game.finished and game.move_made.
    result_batch_size: int = Field(default=500, ge=1)
    # How often stored start and end timers are looked for (real seconds); each look is a query, also
    # when no arena exists. AR-1 counts in minutes, and its end is kept by every pass on its own (no
    # pairing after ends_at): a start, or the closing and ArenaFinished, may come up to this much late.
    timer_poll_seconds: float = Field(default=1.0, gt=0)
