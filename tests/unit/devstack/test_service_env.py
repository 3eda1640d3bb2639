"""What a service process of the development stack starts with: the embedded broker's partitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from arbiter_tools.devstack.stack import ServiceProcess, SystemStack


def _stack(tmp_path: Path, environ: dict[str, str], *, embedded: bool) -> SystemStack:
    stack = SystemStack(tmp_path, environ=environ, kafka_bootstrap="127.0.0.1:1", kafka_embedded=embedded)
    stack.services["rating"] = ServiceProcess("rating", 50054, 9104)
    return stack


def test_services_on_the_embedded_broker_create_topics_of_one_partition(tmp_path: Path) -> None:
    env = _stack(tmp_path, {}, embedded=True).service_env("rating")
    assert env["KAFKA_PARTITIONS"] == "1"


def test_an_operators_partition_count_wins_on_the_embedded_broker(tmp_path: Path) -> None:
    env = _stack(tmp_path, {"KAFKA_PARTITIONS": "6"}, embedded=True).service_env("rating")
    assert env["KAFKA_PARTITIONS"] == "6"


def test_a_given_broker_keeps_the_services_default_partitions(tmp_path: Path) -> None:
    env = _stack(tmp_path, {}, embedded=False).service_env("rating")
    assert "KAFKA_PARTITIONS" not in env


def test_a_services_own_variables_win_over_the_shared_ones_and_stay_its_own(tmp_path: Path) -> None:
    stack = SystemStack(tmp_path, environ={}, kafka_bootstrap="127.0.0.1:1",
                        extra_env={"KAFKA_FETCH_MAX_WAIT_MS": "20", "EVENT_LOOP": "uvloop"},
                        service_extra_env={"rating": {"KAFKA_FETCH_MAX_WAIT_MS": "100"}})
    stack.services["rating"] = ServiceProcess("rating", 50054, 9104)
    stack.services["pairing"] = ServiceProcess("pairing", 50051, 9101)
    rating, pairing = stack.service_env("rating"), stack.service_env("pairing")
    assert (rating["KAFKA_FETCH_MAX_WAIT_MS"], rating["EVENT_LOOP"]) == ("100", "uvloop")
    assert (pairing["KAFKA_FETCH_MAX_WAIT_MS"], pairing["EVENT_LOOP"]) == ("20", "uvloop")


def test_only_the_services_that_stream_have_watch_servers(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {}, embedded=True)
    with pytest.raises(ValueError, match="rating serves no Watch stream; watch servers: pairing, arena"):
        stack.start_watch_server("rating")
    assert stack.watch_servers == {}


def test_a_watch_server_is_named_after_its_service() -> None:
    server = ServiceProcess("arena", 1, 2, watch_only=True)
    assert server.label == "arena-watch"
    assert ServiceProcess("arena", 1, 2, replica=2).label == "arena-2"
