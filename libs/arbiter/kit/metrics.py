"""Prometheus metrics of one service: an explicit registry, the kit's standard series, /metrics."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CollectorRegistry, Counter, Gauge, Histogram,
    start_http_server,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A young collection takes tens of microseconds, a full one of a large heap tens of milliseconds.
GC_PAUSE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5)


class Metrics:
    """The standard series every service exports, plus a registry for its own."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        # CPU, memory and GC per process, for the dashboards and the load benchmark.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.grpc_requests = Counter(
            "arbiter_grpc_requests_total", "gRPC calls by method and status code",
            ["service", "method", "code"], registry=self.registry,
        )
        self.grpc_latency = Histogram(
            "arbiter_grpc_request_seconds", "gRPC handler latency", ["service", "method"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.events_consumed = Counter(
            "arbiter_events_consumed_total",
            "Events consumed by outcome (handled, duplicate, ignored, error)",
            ["service", "topic", "outcome"], registry=self.registry,
        )
        self.handler_latency = Histogram(
            "arbiter_event_handler_seconds", "Event handler latency", ["service", "topic"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.events_published = Counter(
            "arbiter_events_published_total", "Events published to Kafka", ["service", "topic"],
            registry=self.registry,
        )
        self.outbox_pending = Gauge(
            "arbiter_outbox_pending", "Outbox events not yet published", ["service"], registry=self.registry,
        )
        self.outbox_set_aside = Counter(
            "arbiter_outbox_set_aside_total", "Events Kafka can never take as they are, set aside unpublished",
            ["service", "topic"], registry=self.registry,
        )
        self.consumer_lag = Gauge(
            "arbiter_consumer_lag", "Records between this replica's read position and the partition end, as of its last fetch",
            ["service", "topic", "partition"], registry=self.registry,
        )
        self.errors = Counter(
            "arbiter_errors_total", "Unexpected errors by kind", ["service", "kind"], registry=self.registry,
        )
        self.timers_fired = Counter(
            "arbiter_timers_fired_total", "Stored timers fired", ["service", "kind"], registry=self.registry,
        )
        self.refused_calls = Counter(
            "arbiter_refused_calls_total", "Calls refused with a client error", ["service", "method", "code"],
            registry=self.registry,
        )
        self.gc_pause = Histogram(
            "arbiter_gc_pause_seconds", "Garbage collections by generation: the event loop stands still meanwhile",
            ["service", "generation"], buckets=GC_PAUSE_BUCKETS, registry=self.registry,
        )

    def watch_garbage_collector(self) -> Callable[[], None]:
        """Time every collection of this process into `gc_pause`; returns the function that stops it."""
        started = 0.0
        by_generation = [self.gc_pause.labels(self.service, str(generation)) for generation in range(3)]

        def on_collection(phase: str, info: dict[str, int]) -> None:
            nonlocal started
            if phase == "start":
                started = time.perf_counter()
            else:
                by_generation[info["generation"]].observe(time.perf_counter() - started)

        gc.callbacks.append(on_collection)
        return lambda: gc.callbacks.remove(on_collection)

    def counter(self, name: str, documentation: str, labels: tuple[str, ...] = ()) -> Counter:
        """A service-specific counter with the `service` label first."""
        return Counter(name, documentation, ["service", *labels], registry=self.registry)

    def gauge(self, name: str, documentation: str, labels: tuple[str, ...] = ()) -> Gauge:
        """A service-specific gauge with the `service` label first."""
        return Gauge(name, documentation, ["service", *labels], registry=self.registry)

    def histogram(
        self, name: str, documentation: str, labels: tuple[str, ...] = (), buckets: tuple[float, ...] = LATENCY_BUCKETS
    ) -> Histogram:
        """A service-specific histogram with the `service` label first."""
        return Histogram(name, documentation, ["service", *labels], buckets=buckets, registry=self.registry)

    def serve(self, host: str, port: int) -> tuple[Any, Any]:
        """Start the /metrics HTTP endpoint in a daemon thread; returns (server, thread)."""
        return start_http_server(port, addr=host, registry=self.registry)
