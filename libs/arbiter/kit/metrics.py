"""Prometheus metrics of one service: an explicit registry, the kit's standard series, /metrics."""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from arbiter.kit.health import EventLoopLag

# What a consumed event came to (kit.kafka): a handler's own outcome, or what the kit decided.
CONSUMED_OUTCOMES = ("handled", "duplicate", "ignored", "error", "set_aside")
# Kinds of `arbiter_errors_total` every service can count; a part that counts its own kinds
# creates them where it is made.
KIT_ERROR_KINDS = ("grpc", "outbox_relay")
# The dependencies whose answer decides readiness (kit.health).
DEPENDENCIES = ("kafka", "postgresql", "redis")
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A young collection takes tens of microseconds, a full one of a large heap tens of milliseconds.
GC_PAUSE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5)
# A Watch stream lives from seconds (a client that leaves) to WATCH_MAX_SECONDS (an hour by default).
STREAM_BUCKETS = (0.1, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0)

MetricT = TypeVar("MetricT", Counter, Histogram)


def precreate(metric: MetricT, service: str, known: Iterable[Sequence[str]]) -> MetricT:
    """Create `metric`'s series for every known combination of its labels (after `service`) at zero.

    A counter or histogram has no series until its first event: `increase()` over the window of
    that event then reads nothing, so a panel shows "no data" and an alert on it never fires.
    """
    for values in known:
        metric.labels(service, *values)
    return metric


def combinations(*values: Iterable[str]) -> list[tuple[str, ...]]:
    """Every combination of one value per label, for `precreate`."""
    return list(itertools.product(*values))


class Metrics:
    """The standard series every service exports, plus a registry for its own."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        # CPU, memory and GC per process, for the dashboards and the load benchmark.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        # Unary and streaming calls by closing status; health checks and reflection are not traffic.
        self.grpc_requests = Counter(
            "arbiter_grpc_requests_total", "gRPC calls (unary and streams) by method and closing status code",
            ["service", "method", "code"], registry=self.registry,
        )
        self.grpc_latency = Histogram(
            "arbiter_grpc_request_seconds", "Unary gRPC handler latency (streams: arbiter_grpc_stream_seconds)",
            ["service", "method"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.grpc_server_errors = Counter(
            "arbiter_grpc_server_errors_total",
            "gRPC calls that failed on our side (INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE, DEADLINE_EXCEEDED,"
            " UNIMPLEMENTED, ABORTED): never a refusal by design",
            ["service", "method", "code"], registry=self.registry,
        )
        self.grpc_stream_seconds = Histogram(
            "arbiter_grpc_stream_seconds", "How long server streams (Watch) stayed open, counted when they end",
            ["service", "method"], buckets=STREAM_BUCKETS, registry=self.registry,
        )
        self.grpc_streams_open = Gauge(
            "arbiter_grpc_streams_open", "Server streams (Watch) open now", ["service", "method"],
            registry=self.registry,
        )
        self.events_consumed = Counter(
            "arbiter_events_consumed_total",
            "Events consumed by outcome (handled, duplicate, ignored, error, set_aside)",
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
        self.events_set_aside = Counter(
            "arbiter_events_set_aside_total",
            "Consumed records set aside in the service's consumer_set_aside table so that their partition moves on,"
            " by reason (undecodable, invalid, handler_failed); `arbiter set-aside` lists and replays them",
            ["service", "topic", "reason"], registry=self.registry,
        )
        self.consumer_lag = Gauge(
            "arbiter_consumer_lag",
            "Records between this replica's read position and the partition end, as of its last fetch",
            ["service", "topic", "partition"], registry=self.registry,
        )
        self.errors = precreate(Counter(
            "arbiter_errors_total", "Unexpected errors by kind", ["service", "kind"], registry=self.registry,
        ), service, combinations(KIT_ERROR_KINDS))
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
        self.dependency_up = Gauge(
            "arbiter_dependency_up", "1 while the dependency answered the last readiness check, else 0",
            ["service", "dependency"], registry=self.registry,
        )
        self.event_loop_lag = EventLoopLag(service)
        self.registry.register(self.event_loop_lag)
        self.build_info = Gauge(
            "arbiter_build_info", "Always 1: the version and source revision this process runs",
            ["service", "version", "revision"], registry=self.registry,
        )

    def describe_build(self, version: str, revision: str) -> None:
        """Export `arbiter_build_info` for this process."""
        self.build_info.labels(self.service, version, revision or "unknown").set(1)

    def expect_consumed(self, topics: Iterable[str]) -> None:
        """Create the consumed-event series of `topics` at zero (every outcome, and the handler latency)."""
        topics = list(topics)
        precreate(self.events_consumed, self.service, combinations(topics, CONSUMED_OUTCOMES))
        precreate(self.handler_latency, self.service, combinations(topics))

    def expect_published(self, topics: Iterable[str]) -> None:
        """Create the published and set-aside series of the topics this service publishes at zero."""
        topics = list(topics)
        precreate(self.events_published, self.service, combinations(topics))
        precreate(self.outbox_set_aside, self.service, combinations(topics))

    def expect_timers(self, kinds: Iterable[str]) -> None:
        """Create the fired-timer series of `kinds` and the timer errors at zero (only services with timers)."""
        precreate(self.timers_fired, self.service, combinations(kinds))
        precreate(self.errors, self.service, combinations(("timer", "timer_poll")))

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

    def counter(self, name: str, documentation: str, labels: tuple[str, ...] = (),
                known: Iterable[Sequence[str]] | None = None) -> Counter:
        """A service-specific counter with the `service` label first, its `known` label values created at zero.

        Without other labels its one series is created; with some, `known` lists every
        combination the service can count (`combinations` builds them).
        """
        counter = Counter(name, documentation, ["service", *labels], registry=self.registry)
        return precreate(counter, self.service, _known(name, labels, known))

    def gauge(self, name: str, documentation: str, labels: tuple[str, ...] = ()) -> Gauge:
        """A service-specific gauge with the `service` label first."""
        return Gauge(name, documentation, ["service", *labels], registry=self.registry)

    def histogram(
        self, name: str, documentation: str, labels: tuple[str, ...] = (), buckets: tuple[float, ...] = LATENCY_BUCKETS,
        known: Iterable[Sequence[str]] | None = None,
    ) -> Histogram:
        """A service-specific histogram with the `service` label first, its `known` label values created empty."""
        histogram = Histogram(name, documentation, ["service", *labels], buckets=buckets, registry=self.registry)
        return precreate(histogram, self.service, _known(name, labels, known))

    def serve(self, host: str, port: int) -> tuple[Any, Any]:
        """Start the /metrics HTTP endpoint in a daemon thread; returns (server, thread)."""
        return start_http_server(port, addr=host, registry=self.registry)


def _known(name: str, labels: tuple[str, ...], known: Iterable[Sequence[str]] | None) -> Iterable[Sequence[str]]:
    if known is not None:
        return known
    if labels:
        raise ValueError(f"{name}: a labelled counter or histogram names its known label values (known=...)")
    return ((),)


@dataclass(frozen=True)
class ServiceMetrics:
    """A set of series of a service's own (or of a kit part's), beside the standard ones of `Metrics`.

    The one pattern: a frozen dataclass subclass whose fields are its series, typed as what they
    are (`Counter`, `Gauge`, `Histogram`), made by a classmethod `create(cls, metrics: Metrics)`
    that registers them with `metrics.counter` / `.gauge` / `.histogram` and passes
    `service=metrics.service`, the first label of every series. It lives in the service's
    `metrics.py` (the kit's parts: beside the part).
    """

    service: str
