"""The rating service's own Prometheus series: games by outcome and reason, revisions, update latency."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Histogram

from arbiter.kit.metrics import Metrics, ServiceMetrics, combinations
from arbiter.rating import RatedReason
from services.rating.games import INVALID

# Every (outcome, reason) of arbiter_rating_games_total: rated, or not and why, or a repeat.
GAME_OUTCOMES = (
    [("rated", RatedReason.RATED.value)]
    + combinations(["ignored"], [r.value for r in RatedReason if r is not RatedReason.RATED] + [INVALID])
    + combinations(["duplicate"], ["redelivered", "already_rated"])
)
# Seconds from a game's finish to its rating committed; a backlog after an outage reaches minutes.
UPDATE_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


@dataclass(frozen=True)
class RatingMetrics(ServiceMetrics):
    """Games by outcome and reason, rated games revised, update latency."""

    games: Counter
    revised: Counter
    update_latency: Histogram

    @classmethod
    def create(cls, metrics: Metrics) -> RatingMetrics:
        """Register the series on the service's registry."""
        return cls(
            service=metrics.service,
            games=metrics.counter(
                "arbiter_rating_games_total",
                "GameFinished events by outcome (rated, ignored, duplicate) and reason (rated, friendly, never_sat,"
                " busy_forfeit, both_absent, bye, invalid; redelivered: the event that rated or ignored it came"
                " again; already_rated: its game was rated under another event id)",
                ("outcome", "reason"), known=GAME_OUTCOMES,
            ),
            revised=metrics.counter(
                "arbiter_rating_games_revised_total",
                "Rated games whose result was recomputed because a game that finished earlier arrived later",
            ),
            update_latency=metrics.histogram(
                "arbiter_rating_update_latency_seconds",
                "Real seconds from a game's finish to its rating change committed",
                buckets=UPDATE_LATENCY_BUCKETS,
            ),
        )

    def count(self, outcome: str, reason: str, amount: int = 1) -> None:
        """Add `amount` games to one (outcome, reason) series."""
        if amount:
            self.games.labels(self.service, outcome, reason).inc(amount)
