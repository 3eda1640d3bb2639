"""Which handler failures a consumer waits out (never setting the event aside) and which count as the event's fault."""

from __future__ import annotations

import asyncpg
import grpc
import pytest
import redis.exceptions as redis_errors
from aiokafka.errors import KafkaConnectionError, UnknownTopicOrPartitionError

from arbiter.kit.errors import RetryLater
from arbiter.kit.poison import is_transient
from services.clock.hot import HotStateLost


class _LostState(RetryLater):
    """A handler's own way of saying the state it relied on is gone."""


@pytest.mark.parametrize("error", [
    ConnectionRefusedError(), TimeoutError(), asyncpg.exceptions.CannotConnectNowError("starting"),
    asyncpg.exceptions.DeadlockDetectedError("deadlock"), redis_errors.ConnectionError("gone"),
    KafkaConnectionError(), UnknownTopicOrPartitionError(), _LostState(), HotStateLost("epoch moved"),
])
def test_outages_and_lost_state_are_waited_out(error: BaseException) -> None:
    assert is_transient(error)


@pytest.mark.parametrize("error", [
    ValueError("bad event"), KeyError("player"), asyncpg.exceptions.DataError("out of range"),
    redis_errors.ResponseError("WRONGTYPE"), asyncpg.exceptions.UniqueViolationError("dup"),
])
def test_failures_of_the_event_itself_are_not(error: BaseException) -> None:
    assert not is_transient(error)


def test_an_unreachable_service_is_an_outage_a_refusal_is_not() -> None:
    def rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="x")

    assert is_transient(rpc_error(grpc.StatusCode.UNAVAILABLE))
    assert is_transient(rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED))
    assert not is_transient(rpc_error(grpc.StatusCode.INVALID_ARGUMENT))
