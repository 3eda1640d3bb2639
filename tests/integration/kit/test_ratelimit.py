"""Per-player rate limits (issue 10): a burst is allowed, then RESOURCE_EXHAUSTED with retry advice, then refill."""

from __future__ import annotations

import uuid

import pytest
import redis.asyncio as aioredis

from arbiter.kit.errors import ResourceExhausted
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
