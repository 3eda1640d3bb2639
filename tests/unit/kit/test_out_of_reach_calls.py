"""A call that fails because PostgreSQL, Redis or another service is out of reach answers UNAVAILABLE (try
again), not INTERNAL: found by the chaos suite, where every Watch stream and the play site's calls got
INTERNAL while PostgreSQL restarted and Redis was killed."""

from __future__ import annotations

import asyncpg
import grpc
import pytest
import redis.exceptions as redis_errors

from arbiter.kit.grpcserver import _Call
from arbiter.kit.metrics import Metrics


class Aborted(Exception):
    """What grpc's context.abort raises, with the status it was given."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code


class AbortingContext:
    """Only what `_Call.fail` calls on a ServicerContext."""

    def set_trailing_metadata(self, _metadata: object) -> None:
        pass

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


async def status_of(error: Exception) -> tuple[grpc.StatusCode, float]:
    metrics = Metrics("test")
    with pytest.raises(Aborted) as aborted:
        await _Call(metrics, "GetThing").fail(error, AbortingContext())  # type: ignore[arg-type]
    return aborted.value.code, metrics.errors.labels("test", "grpc")._value.get()


@pytest.mark.parametrize("error", [
    ConnectionRefusedError(111, "Connection refused"),
    ConnectionResetError(104, "Connection reset by peer"),
    redis_errors.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused."),
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
])
async def test_a_store_out_of_reach_is_unavailable(error: Exception) -> None:
    code, unexpected = await status_of(error)
    assert code == grpc.StatusCode.UNAVAILABLE and unexpected == 0


@pytest.mark.parametrize("error", [KeyError("row"), RuntimeError("a bug"), asyncpg.exceptions.UndefinedTableError("x")])
async def test_anything_else_unexpected_is_still_internal_and_counted(error: Exception) -> None:
    code, unexpected = await status_of(error)
    assert code == grpc.StatusCode.INTERNAL and unexpected == 1
