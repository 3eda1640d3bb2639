"""Rate limits in Redis: per player on the calls people can spam (Create, Join, Leave), per subject on others."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import redis.asyncio as aioredis

from arbiter.kit.errors import ResourceExhausted
from arbiter.kit.fields import shown

# One atomic step of a token bucket: refill for the time passed, then take `cost` or say how long to wait.
# A negative cost gives tokens back, never above the capacity.
_TAKE = """
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * per_ms)
local allowed = 0
local wait_ms = 0
if tokens >= cost then
  tokens = math.min(capacity, tokens - cost)
  allowed = 1
else
  wait_ms = math.ceil((cost - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_ms) + 1000)
return {allowed, wait_ms}
"""


class RateLimiter:
    """At most `capacity` calls in a burst per player and action, refilled over `window_seconds`.

    Real time on purpose: abuse is measured in the caller's seconds, not in the
    competition's scaled time.
    """

    def __init__(
        self, redis: aioredis.Redis, service: str, capacity: int, window_seconds: float,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        if capacity < 1 or window_seconds <= 0:
            raise ValueError("a rate limit needs a capacity >= 1 and a positive window")
        self.redis = redis
        self.service = service
        self.capacity = capacity
        self.per_ms = capacity / (window_seconds * 1000)
        self.now_ms = now_ms
        self._take = redis.register_script(_TAKE)

    async def check(self, player_id: str, action: str) -> None:
        """Take one call from the player's bucket, or refuse with RESOURCE_EXHAUSTED and when to retry."""
        wait_ms = await self.take(player_id, action)
        if wait_ms:
            retry = max(1, math.ceil(wait_ms / 1000))
            raise ResourceExhausted(
                f"player {shown(player_id)} made too many {action} calls; retry in {retry} s"
                f" (at most {self.capacity} in a burst)",
                retry_after_ms=wait_ms,
            )

    async def take(self, subject: str, action: str) -> int:
        """Take one from `subject`'s bucket for `action`: 0 when allowed, else the milliseconds until one is."""
        allowed, wait_ms = await self._take(
            keys=[self._key(subject, action)], args=[self.capacity, repr(self.per_ms), self.now_ms(), 1],
        )
        return 0 if int(allowed) else max(1, int(wait_ms))

    async def give_back(self, subject: str, action: str) -> None:
        """Return one taken by `take` (the attempt it paid for turned out not to count)."""
        await self._take(keys=[self._key(subject, action)], args=[self.capacity, repr(self.per_ms), self.now_ms(), -1])

    def _key(self, subject: str, action: str) -> str:
        return f"ratelimit:{{{self.service}:{action}:{subject}}}"
