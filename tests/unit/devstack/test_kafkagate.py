"""The Kafka gate's reading and writing of the wire, checked against another implementation: aiokafka's
own request encoders and response decoders (arbiter_tools.devstack.kafkagate)."""

from __future__ import annotations

import io
import struct

import pytest
from aiokafka.protocol import produce

from arbiter_tools.devstack.kafkagate import (
    PRODUCE,
    TOPIC_AUTHORIZATION_FAILED,
    ProduceRequest,
    ProtocolError,
    ScramExchange,
    ScramUser,
    parse_produce,
    parse_request,
    policy_for,
    produce_refusal,
)

REQUESTS = [produce.ProduceRequest_v0, produce.ProduceRequest_v1, produce.ProduceRequest_v2, produce.ProduceRequest_v3,
            produce.ProduceRequest_v4, produce.ProduceRequest_v5, produce.ProduceRequest_v6,
            produce.ProduceRequest_v7, produce.ProduceRequest_v8]
RESPONSES = [produce.ProduceResponse_v0, produce.ProduceResponse_v1, produce.ProduceResponse_v2,
             produce.ProduceResponse_v3, produce.ProduceResponse_v4, produce.ProduceResponse_v5,
             produce.ProduceResponse_v6, produce.ProduceResponse_v7, produce.ProduceResponse_v8]
TOPICS = [("game.finished", [(0, b"batch-a"), (3, b"batch-b")]), ("game.started", [(1, b"")])]


def _frame(version: int, acks: int = -1) -> bytes:
    struct_class = REQUESTS[version]
    fields = ([None] if version >= 3 else []) + [acks, 30_000, TOPICS]
    request = struct_class(*fields)
    return request.build_request_header(correlation_id=77, client_id="arbiter-rating").encode() + request.encode()


@pytest.mark.parametrize("version", range(9))
def test_a_produce_request_of_any_version_names_its_topics_and_partitions(version: int) -> None:
    request = parse_request(_frame(version, acks=0))
    assert (request.api_key, request.version, request.correlation_id) == (PRODUCE, version, 77)
    assert parse_produce(request) == ProduceRequest(0, {"game.finished": [0, 3], "game.started": [1]})


@pytest.mark.parametrize("version", range(9))
def test_the_refusal_reads_as_the_version_asked_for_every_partition(version: int) -> None:
    request = parse_request(_frame(version))
    frame = produce_refusal(request, parse_produce(request), "rating may not write game.finished")
    size, correlation_id = struct.unpack(">ii", frame[:8])
    assert size == len(frame) - 4 and correlation_id == 77
    decoded = RESPONSES[version].decode(io.BytesIO(frame[8:]))
    refused = [(topic, partition[0], partition[1]) for topic, partitions in decoded.topics for partition in partitions]
    assert refused == [
        ("game.finished", 0, TOPIC_AUTHORIZATION_FAILED),
        ("game.finished", 3, TOPIC_AUTHORIZATION_FAILED),
        ("game.started", 1, TOPIC_AUTHORIZATION_FAILED),
    ]


def test_a_frame_shorter_than_its_fields_is_refused() -> None:
    with pytest.raises(ProtocolError):
        parse_produce(parse_request(_frame(7)[:-5]))


def test_scram_refuses_a_wrong_proof_and_an_exchange_out_of_order() -> None:
    users = {"rating": ScramUser.from_password("right")}
    exchange = ScramExchange(users)
    with pytest.raises(ValueError, match="out of order"):
        exchange.final(b"c=biws,r=abc,p=AAAA")
    server_first = exchange.first(b"n,,n=rating,r=client-nonce").decode()
    assert server_first.startswith("r=client-nonce") and ",i=4096" in server_first
    nonce = server_first.split(",")[0][2:]
    with pytest.raises(ValueError, match="wrong password|wrong length"):
        exchange.final(f"c=biws,r={nonce},p={'A' * 88}".encode())
    with pytest.raises(ValueError, match="unknown user"):
        ScramExchange(users).first(b"n,,n=nobody,r=x")


def test_each_user_writes_only_the_topics_it_produces_and_admins_write_any() -> None:
    policy = policy_for({"rating": "r", "play-site": "p", "operator": "o"},
                        {"rating.updated": frozenset({"rating"}), "game.finished": frozenset({"play-site", "pairing"})},
                        admins=("operator",))
    assert policy.may_write("rating", ["rating.updated"]) == []
    assert policy.may_write("rating", ["rating.updated", "game.finished"]) == ["game.finished"]
    assert policy.may_write("operator", ["game.finished", "anything"]) == []
    assert policy.may_write("nobody", ["game.finished"]) == ["game.finished"]
