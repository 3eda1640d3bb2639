"""`--replicas`: counts per service, partitions enough for them, every replica's address for its callers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter_tools.devstack.replicas import (
    SERVICE_DEFAULT_PARTITIONS,
    ReplicaSpecError,
    grpc_target,
    parse_replicas,
    partitions_for,
    replicas_status,
)
from arbiter_tools.devstack.stack import SERVICE_NAMES, ServiceProcess, SystemStack


def test_one_count_for_every_service_then_one_service_overridden() -> None:
    counts = parse_replicas(["2", "clock=3"], SERVICE_NAMES)
    assert counts == {"openings": 2, "rating": 2, "clock": 3, "arena": 2, "pairing": 2}


def test_comma_separated_values_and_services_not_named_keep_one() -> None:
    assert parse_replicas(["arena=2,rating=4"], SERVICE_NAMES) == {
        "openings": 1, "rating": 4, "clock": 1, "arena": 2, "pairing": 1}
    assert parse_replicas([], SERVICE_NAMES) == dict.fromkeys(SERVICE_NAMES, 1)


@pytest.mark.parametrize("value", ["0", "clock=0", "clok=2", "two", "clock=", "=2", "-1"])
def test_a_bad_value_is_refused_with_what_it_must_be(value: str) -> None:
    with pytest.raises(ReplicaSpecError, match="--replicas"):
        parse_replicas([value], SERVICE_NAMES)


@given(st.integers(1, 64), st.one_of(st.none(), st.integers(1, 64).map(str)), st.one_of(st.none(), st.integers(1, 8)))
def test_partitions_are_never_fewer_than_the_most_replicas(largest: int, given_count: str | None,
                                                           embedded: int | None) -> None:
    partitions = partitions_for(largest, given_count, embedded)
    effective = int(partitions) if partitions is not None else SERVICE_DEFAULT_PARTITIONS
    assert effective >= largest
    if given_count is not None:
        assert effective == max(int(given_count), largest)  # the operator's count is kept when enough


def test_the_embedded_broker_gets_no_more_partitions_than_the_replicas_need() -> None:
    assert partitions_for(1, None, 1) == "1"
    assert partitions_for(2, None, 1) == "2"
    assert partitions_for(2, None, None) is None  # a given broker: the services' default of 4 suffices


def test_one_address_is_dialled_as_it_is_several_as_one_balanced_target() -> None:
    assert grpc_target(["127.0.0.1:5"]) == "127.0.0.1:5"
    assert grpc_target(["127.0.0.1:5", "127.0.0.1:6"]) == "ipv4:127.0.0.1:5,127.0.0.1:6"
    with pytest.raises(ValueError):
        grpc_target([])


def test_the_live_view_names_every_replica_up_or_down() -> None:
    line = replicas_status({"clock": [("clock", True), ("clock-2", False)], "rating": [("rating", True)]})
    assert line == "replicas: clock up  clock-2 DOWN  rating up"


def _two_clocks(tmp_path: Path) -> SystemStack:
    stack = SystemStack(tmp_path, environ={}, kafka_bootstrap="127.0.0.1:1", kafka_embedded=True,
                        replica_counts={"clock": 2})
    stack.services["clock"] = ServiceProcess("clock", 50052, 9102)
    stack.replicas["clock"] = [stack.services["clock"], ServiceProcess("clock", 20001, 20002, replica=2)]
    stack.services["pairing"] = ServiceProcess("pairing", 50051, 9101)
    return stack


def test_each_replica_has_its_own_ports_and_name_and_callers_get_every_replica(tmp_path: Path) -> None:
    stack = _two_clocks(tmp_path)
    first, second, pairing = stack.service_env("clock"), stack.service_env("clock", 2), stack.service_env("pairing")
    assert (first["GRPC_PORT"], first["METRICS_PORT"], first["REPLICA_ID"]) == ("50052", "9102", "clock")
    assert (second["GRPC_PORT"], second["METRICS_PORT"], second["REPLICA_ID"]) == ("20001", "20002", "clock-2")
    assert pairing["CLOCK_GRPC_ADDR"] == "ipv4:127.0.0.1:50052,127.0.0.1:20001"
    assert pairing["PAIRING_GRPC_ADDR"] == "127.0.0.1:50051"
    assert "REPLICA_ID" not in pairing
    # Two clock replicas share the consumer groups: every topic needs two partitions at least.
    assert {first["KAFKA_PARTITIONS"], pairing["KAFKA_PARTITIONS"]} == {"2"}


def test_an_operators_partition_count_below_the_replicas_is_raised(tmp_path: Path) -> None:
    stack = _two_clocks(tmp_path)
    stack.extra_env = {"KAFKA_PARTITIONS": "1"}
    assert stack.service_env("pairing")["KAFKA_PARTITIONS"] == "2"
    assert stack.kafka_partitions == "2"
