"""The openings service's own Prometheus series: round openings returned."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter

from arbiter.kit.metrics import Metrics, ServiceMetrics
from arbiter.openings import playable_modes

DRAW_OUTCOMES = ("drawn", "repeated")


@dataclass(frozen=True)
class OpeningsMetrics(ServiceMetrics):
    """Round openings returned, by variant, mode and outcome."""

    draws: Counter

    @classmethod
    def create(cls, metrics: Metrics) -> OpeningsMetrics:
        """Register the series on the service's registry."""
        return cls(
            service=metrics.service,
            draws=metrics.counter(
                "arbiter_opening_draws_total",
                "Round openings returned, by variant, mode and outcome (drawn now, or repeated from the store)",
                ("variant", "mode", "outcome"),
                known=[(variant, mode, outcome) for variant, mode in playable_modes() for outcome in DRAW_OUTCOMES],
            ),
        )
