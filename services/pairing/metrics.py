"""The pairing service's own Prometheus series."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from arbiter.competition.types import Format
from arbiter.kit import events
from arbiter.kit.metrics import Metrics, ServiceMetrics, combinations

_PAIRING_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
STATES = ("scheduled", "starting", "running", "finished", "cancelled")
# The topics whose events decide a round game (services/pairing/handlers.py).
RESULT_SOURCES = (events.GAME_FINISHED.name, events.CLOCK_FLAGGED.name, events.GAME_ABANDONED.name)
IGNORED_REASONS = ("unknown_game", "already_scored", "invalid")
# Why a tournament step failed: another service did not answer, or anything else.
STEP_ERRORS = ("unavailable", "error")


@dataclass(frozen=True)
class PairingMetrics(ServiceMetrics):
    """Tournaments by state, pairing duration, games requested, results applied and ignored, Swiss refusals."""

    tournaments: Gauge
    pairing_seconds: Histogram
    games_requested: Counter
    results_applied: Counter
    results_ignored: Counter
    results_corrected: Counter
    busy_forfeits: Counter
    busy_rebuilds: Counter
    engine_faults: Counter
    no_valid_pairing: Counter
    hot_rebuilds: Counter
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
                ("format",), buckets=_PAIRING_BUCKETS, known=combinations([f.value for f in Format]),
            ),
            games_requested=metrics.counter("arbiter_games_requested_total", "GameRequested events saved"),
            results_applied=metrics.counter(
                "arbiter_results_applied_total", "Game results applied, by the topic that decided", ("source",),
                known=combinations(RESULT_SOURCES),
            ),
            results_corrected=metrics.counter(
                "arbiter_results_corrected_total",
                "Provisional results (flag, abandonment) replaced by the play site's differing GameFinished",
                ("source",), known=[(events.GAME_FINISHED.name,)],
            ),
            results_ignored=metrics.counter(
                "arbiter_results_ignored_total",
                "Results not applied: unknown_game, already_scored, invalid", ("reason",),
                known=combinations(IGNORED_REASONS),
            ),
            busy_forfeits=metrics.counter("arbiter_busy_forfeits_total", "Round games forfeited as busy (T-18)"),
            busy_rebuilds=metrics.counter(
                "arbiter_busy_registry_rebuilds_total",
                "Times the busy registry (T-18) was replayed from the game topics after Redis lost it",
            ),
            engine_faults=metrics.counter(
                "arbiter_pairing_engine_faults_total",
                "Swiss rounds the engine failed: a pairing that broke an absolute criterion (C.04.1, refused by the"
                " guard) or an internal fault; the tournament ended. Should stay 0",
            ),
            no_valid_pairing=metrics.counter(
                "arbiter_pairing_no_valid_pairing_total",
                "Swiss rounds no pairing could comply with (T-13, C.04.1): the tournament ended early"
            ),
            hot_rebuilds=metrics.counter(
                "arbiter_hot_rebuilds_total",
                "Rebuilds of Redis state because Redis no longer held it, by what", ("what",),
                known=[("busy_registry",)],
            ),
            advance_errors=metrics.counter(
                "arbiter_tournament_step_errors_total", "Failed attempts to move a tournament on (retried)", ("step",),
                known=combinations(STEP_ERRORS),
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
