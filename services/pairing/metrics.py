"""The pairing service's own Prometheus series."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from arbiter.kit.metrics import Metrics

_PAIRING_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
STATES = ("scheduled", "starting", "running", "finished", "cancelled")


@dataclass
class PairingMetrics:
    """Tournaments by state, pairing duration, games requested, results applied and ignored."""

    service: str
    tournaments: Gauge
    pairing_seconds: Histogram
    games_requested: Counter
    results_applied: Counter
    results_ignored: Counter
    results_corrected: Counter
    busy_forfeits: Counter
    busy_rebuilds: Counter
    pairing_fallbacks: Counter
    advance_errors: Counter
    result_age: Histogram
    step_wait: Histogram

    @classmethod
    def create(cls, metrics: Metrics) -> PairingMetrics:
        """Register the series on the service's registry."""
        return cls(
            service=metrics.service,
            tournaments=metrics.gauge("arbiter_tournaments", "Tournaments by state", ("state",)),
            pairing_seconds=metrics.histogram(
                "arbiter_pairing_seconds",
                "From the decision to pair a round to its commit (opening draw, engine, save)",
                ("format",), buckets=_PAIRING_BUCKETS,
            ),
            games_requested=metrics.counter("arbiter_games_requested_total", "GameRequested events saved"),
            results_applied=metrics.counter(
                "arbiter_results_applied_total", "Game results applied, by the topic that decided", ("source",)
            ),
            results_corrected=metrics.counter(
                "arbiter_results_corrected_total",
                "Provisional results (flag, abandonment) replaced by the play site's differing GameFinished",
                ("source",),
            ),
            results_ignored=metrics.counter(
                "arbiter_results_ignored_total",
                "Results not applied: unknown_game, already_scored, invalid", ("reason",),
            ),
            busy_forfeits=metrics.counter("arbiter_busy_forfeits_total", "Round games forfeited as busy (T-18)"),
            busy_rebuilds=metrics.counter(
                "arbiter_busy_registry_rebuilds_total",
                "Times the busy registry (T-18) was replayed from the game topics after Redis lost it",
            ),
            pairing_fallbacks=metrics.counter(
                "arbiter_pairing_fallbacks_total", "Swiss rounds paired by the fallback, not py4swiss (T-13)"
            ),
            advance_errors=metrics.counter(
                "arbiter_tournament_step_errors_total", "Failed attempts to move a tournament on (retried)", ("step",)
            ),
            result_age=metrics.histogram(
                "arbiter_result_age_seconds",
                "From a round game's GameFinished being published (its occurred_at) to this service handling it",
                buckets=_PAIRING_BUCKETS,
            ),
            step_wait=metrics.histogram(
                "arbiter_tournament_step_wait_seconds",
                "From a tournament being woken (a result applied, a timer) to a worker taking its next step",
                buckets=_PAIRING_BUCKETS,
            ),
        )

    def set_states(self, counts: dict[str, int]) -> None:
        """Set the by-state gauge from a fresh count."""
        for state in STATES:
            self.tournaments.labels(self.service, state).set(counts.get(state, 0))
