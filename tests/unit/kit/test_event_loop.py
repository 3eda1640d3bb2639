"""The event loop a process runs on: uvloop unless EVENT_LOOP says asyncio; anything else is refused."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from arbiter.kit.eventloop import run_on
from arbiter.kit.settings import KitSettings, SettingsError, load_settings

REQUIRED = {"KAFKA_BOOTSTRAP_SERVERS": "k:9092", "REDIS_URL": "redis://r:6379/0",
            "DATABASE_URL": "postgresql://p/db", "GRPC_PORT": "0", "METRICS_PORT": "0"}


async def _loop_and_answer() -> tuple[type, int]:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()), 42


def test_uvloop_runs_the_coroutine_on_a_uvloop_loop() -> None:
    loop_type, answer = run_on("uvloop", _loop_and_answer)
    assert issubclass(loop_type, uvloop.Loop) and answer == 42


def test_asyncio_runs_the_coroutine_on_the_standard_loop() -> None:
    loop_type, answer = run_on("asyncio", _loop_and_answer)
    assert not issubclass(loop_type, uvloop.Loop) and issubclass(loop_type, asyncio.AbstractEventLoop)
    assert answer == 42


def test_settings_default_to_uvloop_and_read_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EVENT_LOOP", raising=False)
    assert load_settings(KitSettings).event_loop == "uvloop"
    monkeypatch.setenv("EVENT_LOOP", "asyncio")
    assert load_settings(KitSettings).event_loop == "asyncio"


def test_an_unknown_event_loop_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in REQUIRED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EVENT_LOOP", "trio")
    with pytest.raises(SettingsError, match="EVENT_LOOP"):
        load_settings(KitSettings)
