"""The arena service's own Prometheus series (the kit adds gRPC, events, outbox and timers)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from arbiter.kit.metrics import Metrics, ServiceMetrics

# Game end -> next GameRequested is a latency target (p99 <= 50 ms): fine buckets below 100 ms.
REQUEUE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass(frozen=True)
class ArenaMetrics(ServiceMetrics):
    """Waiting players, requeue latency, pairings, cooldown refusals, leaderboard size, fallbacks, ownership."""

    waiting: Gauge
    requeue_to_request: Histogram
    pairings: Counter
    pass_seconds: Histogram
    cooldown_refusals: Counter
    leaderboard_size: Gauge
    rating_fallbacks: Counter
    rebuilds: Counter
    hot_rebuilds: Counter
    owned: Gauge
    live: Gauge
    # The kit's arbiter_errors_total for a failed pairing pass.
    pass_failures: Counter

    @classmethod
    def create(cls, metrics: Metrics) -> ArenaMetrics:
        """Register the series on the service's registry."""
        return cls(
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
            hot_rebuilds=metrics.counter(
                "arbiter_hot_rebuilds_total",
                "Rebuilds of Redis state from PostgreSQL because Redis no longer held it (for an arena: its keys "
                "found missing, after a Redis loss or a marker dropped on purpose), by what", ("what",),
                known=[("arena",)]),
            owned=metrics.gauge("arbiter_arena_owned_arenas", "Arenas this replica pairs (holds the lease of)"),
            # Every replica reads the same count: beside the owned ones, it shows live arenas nobody pairs.
            live=metrics.gauge("arbiter_arena_live_arenas", "Arenas running or closing, whoever pairs them"),
            pass_failures=metrics.errors.labels(metrics.service, "arena_pass"),
        )
