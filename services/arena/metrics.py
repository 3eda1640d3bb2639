"""The arena service's own Prometheus series (the kit adds gRPC, events, outbox and timers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arbiter.kit.metrics import Metrics

# Game end -> next GameRequested is a latency target (p99 <= 50 ms): fine buckets below 100 ms.
REQUEUE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class ArenaMetrics:
    """Waiting players, requeue latency, pairings, cooldown refusals, leaderboard size, fallbacks."""

    service: str
    waiting: Any
    requeue_to_request: Any
    pairings: Any
    pass_seconds: Any
    cooldown_refusals: Any
    leaderboard_size: Any
    rating_fallbacks: Any
    rebuilds: Any
    owned: Any

    @staticmethod
    def create(metrics: Metrics) -> ArenaMetrics:
        """Register the series on the service's registry."""
        return ArenaMetrics(
            service=metrics.service,
            waiting=metrics.gauge("arbiter_arena_waiting_players", "Players waiting for a game", ("arena",)),
            requeue_to_request=metrics.histogram(
                "arbiter_arena_requeue_to_request_seconds",
                "Real seconds from a player's game end (back in the queue) to their next GameRequested (AR-2)",
                buckets=REQUEUE_BUCKETS,
            ),
            pairings=metrics.counter("arbiter_arena_pairings_total", "Arena games requested (rate = pairings/s)"),
            pass_seconds=metrics.histogram("arbiter_arena_pairing_pass_seconds", "One pairing pass, end to end"),
            cooldown_refusals=metrics.counter(
                "arbiter_arena_cooldown_refusals_total",
                "Pairs of waiting players that could not meet because of their rematch cooldown (AR-3)",
            ),
            leaderboard_size=metrics.gauge("arbiter_arena_leaderboard_size", "Players on the leaderboard", ("arena",)),
            rating_fallbacks=metrics.counter(
                "arbiter_arena_rating_fallbacks_total", "Pairing passes made by rank only: the rating service failed"
            ),
            rebuilds=metrics.counter("arbiter_arena_rebuilds_total", "Arena Redis keys rebuilt from PostgreSQL"),
            owned=metrics.gauge("arbiter_arena_owned_arenas", "Arenas this replica pairs (holds the lease of)"),
        )
