"""The clock's life-cycle consumer may wait for fuller fetches than its moves' consumer (LIFECYCLE_FETCH_MIN_BYTES)."""

from __future__ import annotations

import pytest

from arbiter.kit.settings import SettingsError, load_settings
from services.clock.settings import ClockSettings


@pytest.fixture
def clock_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The variables every service needs, and no LIFECYCLE_FETCH_MIN_BYTES."""
    for name, value in {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "REDIS_URL": "redis://127.0.0.1:1",
                        "DATABASE_URL": "postgresql://127.0.0.1:1/x"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LIFECYCLE_FETCH_MIN_BYTES", raising=False)
    return monkeypatch


def test_unset_it_follows_kafka_fetch_min_bytes(clock_env: pytest.MonkeyPatch) -> None:
    assert load_settings(ClockSettings).lifecycle_fetch_min_bytes is None
    clock_env.setenv("LIFECYCLE_FETCH_MIN_BYTES", "65536")
    clock_env.setenv("KAFKA_FETCH_MIN_BYTES", "1")
    settings = load_settings(ClockSettings)
    assert (settings.lifecycle_fetch_min_bytes, settings.kafka_fetch_min_bytes) == (65536, 1)


@pytest.mark.parametrize("value", ["0", str(16 * 1024 * 1024 + 1), "many"])
def test_a_size_no_broker_takes_is_refused_by_name(clock_env: pytest.MonkeyPatch, value: str) -> None:
    clock_env.setenv("LIFECYCLE_FETCH_MIN_BYTES", value)
    with pytest.raises(SettingsError, match="LIFECYCLE_FETCH_MIN_BYTES"):
        load_settings(ClockSettings)
