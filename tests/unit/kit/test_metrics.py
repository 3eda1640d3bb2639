"""The kit's metrics: labelled series exist at zero before their first event; the event-loop lag sees a stuck loop."""

from __future__ import annotations

import pytest

from arbiter.kit.health import EventLoopLag
from arbiter.kit.metrics import CONSUMED_OUTCOMES, KIT_ERROR_KINDS, Metrics, combinations


class FakeClock:
    """Monotonic time the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"service": metrics.service, **labels})


def test_a_labelled_counter_must_name_its_known_label_values() -> None:
    metrics = Metrics("m")
    with pytest.raises(ValueError, match="arbiter_things_total: a labelled counter"):
        metrics.counter("arbiter_things_total", "things", ("kind",))


def test_known_label_values_are_created_at_zero() -> None:
    metrics = Metrics("m")
    metrics.counter("arbiter_things_total", "things", ("kind", "outcome"),
                    known=combinations(["a", "b"], ["ok", "failed"]))
    metrics.counter("arbiter_plain_total", "no labels but the service")
    metrics.histogram("arbiter_plain_seconds", "a duration")
    for kind in ("a", "b"):
        for outcome in ("ok", "failed"):
            assert value(metrics, "arbiter_things_total", kind=kind, outcome=outcome) == 0
    assert value(metrics, "arbiter_plain_total") == 0
    assert value(metrics, "arbiter_plain_seconds_count") == 0
    for kind in KIT_ERROR_KINDS:
        assert value(metrics, "arbiter_errors_total", kind=kind) == 0


def test_consumed_published_and_timer_series_start_at_zero() -> None:
    metrics = Metrics("m")
    metrics.expect_consumed(["game.finished"])
    metrics.expect_published(["rating.updated"])
    metrics.expect_timers(["start"])
    for outcome in CONSUMED_OUTCOMES:
        assert value(metrics, "arbiter_events_consumed_total", topic="game.finished", outcome=outcome) == 0
    assert value(metrics, "arbiter_event_handler_seconds_count", topic="game.finished") == 0
    assert value(metrics, "arbiter_events_published_total", topic="rating.updated") == 0
    assert value(metrics, "arbiter_outbox_set_aside_total", topic="rating.updated") == 0
    assert value(metrics, "arbiter_timers_fired_total", kind="start") == 0
    assert value(metrics, "arbiter_errors_total", kind="timer_poll") == 0
    # Nothing is made up for what the service does not do.
    assert value(metrics, "arbiter_events_published_total", topic="game.finished") is None


def test_build_info_names_version_and_revision() -> None:
    metrics = Metrics("m")
    metrics.describe_build("1.2.3", "")
    assert value(metrics, "arbiter_build_info", version="1.2.3", revision="unknown") == 1


def test_the_lag_grows_while_the_loop_is_stuck_and_reads_zero_before_it_runs() -> None:
    clock = FakeClock()
    lag = EventLoopLag("m", interval=0.5, time_source=clock)
    clock.now += 30  # a service still connecting has no loop to judge yet
    assert lag.lag() == 0
    lag._last_wake = clock.now
    clock.now += 0.3
    assert lag.lag() == 0  # the next wake-up is not due yet
    expected = clock.now + 0.2
    clock.now = expected + 0.05
    lag.woke(expected)
    assert lag.lag() == pytest.approx(0.05)
    clock.now += 12.5  # no wake-up since: the thread serving /metrics sees the loop stuck
    assert lag.lag() == pytest.approx(12.0)
    (family,) = lag.collect()
    (sample,) = family.samples
    assert (sample.name, sample.labels, sample.value) == ("arbiter_event_loop_lag_seconds", {"service": "m"},
                                                         pytest.approx(12.0))

