"""The services' garbage collector: tuned once wired, and every collection timed into /metrics."""

from __future__ import annotations

import gc

from prometheus_client import generate_latest

from arbiter.kit.metrics import Metrics
from arbiter.kit.runtime import tune_garbage_collector


def _count(metrics: Metrics, generation: int) -> float:
    value = metrics.registry.get_sample_value(
        "arbiter_gc_pause_seconds_count", {"service": "test", "generation": str(generation)})
    return value or 0.0


def test_every_collection_is_timed_by_generation_until_the_watch_stops() -> None:
    metrics = Metrics("test")
    stop = metrics.watch_garbage_collector()
    try:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
        assert _count(metrics, 0) >= 1 and _count(metrics, 2) >= 2
        assert metrics.registry.get_sample_value(
            "arbiter_gc_pause_seconds_sum", {"service": "test", "generation": "2"}) > 0
    finally:
        stop()
    counted = _count(metrics, 2)
    gc.collect(2)
    assert _count(metrics, 2) == counted
    assert b"arbiter_gc_pause_seconds_bucket" in generate_latest(metrics.registry)


def test_tuning_freezes_what_exists_and_scans_young_objects_less_often_until_restored() -> None:
    before = gc.get_threshold()
    restore = tune_garbage_collector(20_000)
    try:
        assert gc.get_threshold() == (20_000, before[1], before[2])
        assert gc.get_freeze_count() > 0
    finally:
        restore()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_threshold_of_zero_keeps_pythons_own_pace() -> None:
    before = gc.get_threshold()
    restore = tune_garbage_collector(0)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    restore()
    assert gc.get_threshold() == before
