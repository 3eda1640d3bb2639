"""The clock service's own Prometheus series: live clocks, flags by reason, flag latency, moves, Redis rebuilds."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge, Histogram

from arbiter.clocks import VERDICT_REASONS
from arbiter.kit.metrics import Metrics, ServiceMetrics, combinations, precreate

# What a consumed move came to (services/clock/operations.py apply_move; invalid: no game id).
MOVE_OUTCOMES = ("applied", "parked", "late", "stale", "after_end", "not_a_player", "wrong_turn", "invalid")
# The same for the other play-site events, by kind (services/clock/handlers.py).
EVENT_OUTCOMES = {
    "requested": ("started", "handled", "invalid"),
    "started": ("started", "handled", "invalid"),
    "finished": ("handled", "duplicate", "invalid"),
    "presence": ("handled", "too_late", "after_end", "not_a_player", "invalid"),
    "boost": ("applied", "parked", "refused", "ignored", "after_first_move", "not_a_player", "not_allowed",
              "invalid"),
}
# The clock's own kinds of arbiter_errors_total (services/clock/flags.py, publisher.py).
ERROR_KINDS = ("flag_poll", "clock_state_publish")
FLAG_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class ClockMetrics(ServiceMetrics):
    """The clock service's own series, and the kit's arbiter_errors_total for the clock's own kinds."""

    errors: PromCounter
    live_clocks: Gauge
    flags: PromCounter
    flag_latency: Histogram
    moves: PromCounter
    events: PromCounter
    hot_rebuilds: PromCounter
    hot_restored: PromCounter

    @classmethod
    def create(cls, metrics: Metrics) -> ClockMetrics:
        """Register the series on the service's registry."""
        precreate(metrics.errors, metrics.service, combinations(ERROR_KINDS))
        return cls(
            service=metrics.service,
            errors=metrics.errors,
            live_clocks=metrics.gauge("arbiter_clock_live_clocks", "Running clocks (games with a pending deadline)"),
            flags=metrics.counter("arbiter_clock_flags_total", "Verdicts published, by termination reason",
                                  ("reason",), known=combinations([reason.value for reason in VERDICT_REASONS])),
            flag_latency=metrics.histogram(
                "arbiter_clock_flag_latency_seconds",
                "Real seconds from a flag's deadline to its event being saved for publishing", (),
                FLAG_LATENCY_BUCKETS,
            ),
            moves=metrics.counter("arbiter_clock_moves_total", "Moves consumed, by outcome", ("outcome",),
                                  known=combinations(MOVE_OUTCOMES)),
            events=metrics.counter("arbiter_clock_events_total", "Other play-site events, by kind and outcome",
                                   ("kind", "outcome"),
                                   known=[(kind, outcome) for kind, outcomes in EVENT_OUTCOMES.items()
                                          for outcome in outcomes]),
            hot_rebuilds=metrics.counter(
                "arbiter_hot_rebuilds_total", "Rebuilds of Redis state from PostgreSQL after Redis lost it, by what",
                ("what",), known=[("clocks",)]),
            hot_restored=metrics.counter(
                "arbiter_hot_restored_total",
                "Records written back to Redis from PostgreSQL: by a rebuild (live games, Triple Block games) or "
                "on demand (a game Redis lacked when an event or a read came for it)", ("what",),
                known=[("live_games",), ("triple_block",), ("on_demand",)]),
        )

    def count_moves(self, outcomes: Counter[str]) -> None:
        """Add a batch's move outcomes."""
        service = self.service
        for outcome, n in outcomes.items():
            self.moves.labels(service, outcome).inc(n)

    def restored(self, what: str, n: int) -> None:
        """Count `n` records written back to Redis from PostgreSQL."""
        self.hot_restored.labels(self.service, what).inc(n)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        """Count `n` presence, boost or life-cycle events of one outcome."""
        self.events.labels(self.service, kind, outcome).inc(n)
