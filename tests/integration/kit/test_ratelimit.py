"""Per-player rate limits: a burst is allowed, then RESOURCE_EXHAUSTED with retry advice, then refill."""

from __future__ import annotations

import urllib.request
import uuid

import grpc
import pytest
import redis.asyncio as aioredis

from arbiter.contracts import arena_pb2, arena_pb2_grpc, common_pb2
from arbiter.kit.errors import ResourceExhausted
from arbiter.kit.grpcserver import RETRY_AFTER_METADATA
from arbiter.kit.ratelimit import RateLimiter


async def test_a_burst_then_refusal_with_retry_advice_then_refill(redis_url) -> None:
    client = aioredis.from_url(redis_url)
    clock = [1_000_000]
    limiter = RateLimiter(client, f"test-{uuid.uuid4().hex[:6]}", capacity=3, window_seconds=30,
                          now_ms=lambda: clock[0])
    for _ in range(3):
        await limiter.check("p1", "join")
    with pytest.raises(ResourceExhausted, match=r"too many join calls; retry in 10 s") as refused:
        await limiter.check("p1", "join")
    assert "p1" in refused.value.message
    await limiter.check("p2", "join")  # players and actions have their own buckets
    await limiter.check("p1", "create")
    clock[0] += 10_000  # one token back after a third of the window
    await limiter.check("p1", "join")
    with pytest.raises(ResourceExhausted):
        await limiter.check("p1", "join")
    await client.aclose()


@pytest.fixture
def limited_arena(start_system):
    """The arena service with a burst of two calls per player and method."""
    return start_system(("arena",), extra_env={"RATE_LIMIT_BURST": "2", "RATE_LIMIT_WINDOW_SECONDS": "600"})


async def test_a_service_refuses_the_third_join_with_retry_advice_and_counts_it(limited_arena) -> None:
    service = limited_arena.services["arena"]
    player = f"spammer-{uuid.uuid4().hex[:6]}"

    def join(player_id: str) -> arena_pb2.JoinArenaRequest:
        return arena_pb2.JoinArenaRequest(
            actor=common_pb2.Actor(player_id=player_id, kind=common_pb2.ACCOUNT_KIND_REGISTERED),
            arena_id="a_does_not_exist")

    async with grpc.aio.insecure_channel(service.grpc_address) as channel:
        stub = arena_pb2_grpc.ArenaServiceStub(channel)
        for _ in range(2):
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await stub.JoinArena(join(player))
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.JoinArena(join(player))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too many JoinArena calls; retry in" in refused.value.details()
        advice = dict(refused.value.trailing_metadata() or ())
        assert 0 < int(advice[RETRY_AFTER_METADATA]) <= 600_000
        # Another player, and an unlimited method of the same player, are not affected.
        with pytest.raises(grpc.aio.AioRpcError) as other:
            await stub.JoinArena(join(f"{player}-other"))
        assert other.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as read:
            await stub.GetArena(arena_pb2.GetArenaRequest(arena_id="a_does_not_exist"))
        assert read.value.code() == grpc.StatusCode.NOT_FOUND
    with urllib.request.urlopen(service.metrics_url, timeout=5) as reply:
        text = reply.read().decode()
    assert 'arbiter_refused_calls_total{code="RESOURCE_EXHAUSTED",method="JoinArena",service="arena"} 1.0' in text


async def test_an_oversized_request_is_refused_before_any_work(limited_arena) -> None:
    async with grpc.aio.insecure_channel(limited_arena.services["arena"].grpc_address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await arena_pb2_grpc.ArenaServiceStub(channel).GetArena(
                arena_pb2.GetArenaRequest(arena_id="x" * 100_000))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_a_malformed_call_is_refused_for_its_form_and_costs_no_call_of_the_burst(limited_arena) -> None:
    """Bad input changes nothing, the caller's rate-limit bucket included."""
    player = f"careless-{uuid.uuid4().hex[:6]}"

    def join(arena_id: str) -> arena_pb2.JoinArenaRequest:
        return arena_pb2.JoinArenaRequest(
            actor=common_pb2.Actor(player_id=player, kind=common_pb2.ACCOUNT_KIND_REGISTERED), arena_id=arena_id)

    async with grpc.aio.insecure_channel(limited_arena.services["arena"].grpc_address) as channel:
        stub = arena_pb2_grpc.ArenaServiceStub(channel)
        codes = []
        for arena_id in ("", "", "", "a_does_not_exist", "a_does_not_exist", "a_does_not_exist"):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.JoinArena(join(arena_id))
            codes.append(refused.value.code())
    assert codes == [grpc.StatusCode.INVALID_ARGUMENT] * 3 + [grpc.StatusCode.NOT_FOUND] * 2 + [
        grpc.StatusCode.RESOURCE_EXHAUSTED]
