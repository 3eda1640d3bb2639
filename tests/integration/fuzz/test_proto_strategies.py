"""The request strategies themselves (no services needed): every request type of every RPC in the
contracts can be built by each of them and serialized, so a new field type or RPC cannot silently
escape the fuzzing."""

from __future__ import annotations

import math

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.fuzz.fuzz_support import contract_services
from tests.integration.fuzz.proto_strategies import (
    IdPool,
    almost_valid,
    any_message,
    edge_messages,
    field_edge_messages,
    message_class,
    refusable,
)

REQUESTS: list[Descriptor] = sorted(
    {m.input_type.full_name: m.input_type for s in contract_services() for m in s.methods}.values(),
    key=lambda d: d.full_name,
)


def _serializes(message: Message) -> None:
    data = message.SerializeToString()
    again = type(message).FromString(data)
    assert again.SerializeToString(deterministic=True) == message.SerializeToString(deterministic=True) or _has_nan(
        message)


def _has_nan(message: Message) -> bool:
    for fd, value in message.ListFields():
        values = value if fd.is_repeated else [value]
        if fd.type == FieldDescriptor.TYPE_MESSAGE and any(_has_nan(v) for v in values):
            return True
        if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and any(math.isnan(v) for v in values):
            return True
    return False


def test_every_rpc_has_a_request_type() -> None:
    assert REQUESTS, "no gRPC service found in arbiter.contracts"


@pytest.mark.parametrize("descriptor", REQUESTS, ids=lambda d: d.name)
def test_each_strategy_builds_serializable_requests(descriptor: Descriptor) -> None:
    cls = message_class(descriptor)
    pool = IdPool()
    pool.add("tournament_id", "t_0123456789ab")
    pool.add("player_id", "p_known")
    strategy = st.one_of(any_message(cls), almost_valid(cls, pool), refusable(cls, pool))

    @settings(max_examples=15, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(message: Message) -> None:
        assert isinstance(message, cls)
        _serializes(message)

    check()
    for _label, message in [*edge_messages(cls), *field_edge_messages(cls, pool)]:
        _serializes(message)
        assert len(message.SerializeToString()) < 1 << 20  # under the services' receive limit


def test_almost_valid_names_what_the_services_handed_out() -> None:
    from arbiter.contracts import tournament_pb2

    pool = IdPool()
    pool.harvest(tournament_pb2.Tournament(id="t_handed_out", creator_id="p_creator"))
    assert pool.values["tournament_id"] == ["t_handed_out"]
    assert pool.values["player_id"] == ["p_creator"]
    seen: set[str] = set()

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(almost_valid(tournament_pb2.GetTournamentRequest, pool))
    def collect(message: Message) -> None:
        seen.add(message.tournament_id)

    collect()
    assert "t_handed_out" in seen
