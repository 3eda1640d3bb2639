"""The clock service's own Prometheus series: live clocks, flags by reason, flag latency, moves."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge, Histogram

from arbiter.kit.metrics import Metrics

FLAG_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class ClockMetrics:
    """The clock service's own series (the kit's standard ones are on `base`)."""

    base: Metrics
    live_clocks: Gauge
    flags: PromCounter
    flag_latency: Histogram
    moves: PromCounter
    events: PromCounter

    @classmethod
    def create(cls, metrics: Metrics) -> ClockMetrics:
        """Register the series on the service's registry."""
        return cls(
            base=metrics,
            live_clocks=metrics.gauge("arbiter_clock_live_clocks", "Running clocks (games with a pending deadline)"),
            flags=metrics.counter("arbiter_clock_flags_total", "Verdicts published, by termination reason",
                                  ("reason",)),
            flag_latency=metrics.histogram(
                "arbiter_clock_flag_latency_seconds",
                "Real seconds from a flag's deadline to its event being saved for publishing", (),
                FLAG_LATENCY_BUCKETS,
            ),
            moves=metrics.counter("arbiter_clock_moves_total", "Moves consumed, by outcome", ("outcome",)),
            events=metrics.counter("arbiter_clock_events_total", "Other play-site events, by kind and outcome",
                                   ("kind", "outcome")),
        )

    def count_moves(self, outcomes: Counter[str]) -> None:
        """Add a batch's move outcomes."""
        service = self.base.service
        for outcome, n in outcomes.items():
            self.moves.labels(service, outcome).inc(n)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        """Count `n` presence, boost or life-cycle events of one outcome."""
        self.events.labels(self.base.service, kind, outcome).inc(n)
