"""Leases in Redis: one holder of a key at a time, for a while, taken, renewed and given back atomically.

A holder (a replica, a claimant) names itself; the key's value is its name and lives for the
lease. Whoever holds it renews it before it lapses; a holder that dies is replaced once its
lease has lapsed. Every step compares the holder first (a Lua script), so a holder whose lease
lapsed and was taken by another never renews or deletes the other's.
"""

from __future__ import annotations

from redis import asyncio as aioredis

# KEYS: the lease; ARGV: the holder, the lease in ms. 1 if the holder holds it afterwards (taken or renewed).
_HOLD = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# KEYS, ARGV: as _HOLD's. Only extends a lease still held: one that lapsed, or that Redis lost, is not
# taken again (whoever renews is in the middle of work that the lease's loss may have spoiled).
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# KEYS: the lease; ARGV: the holder. 1 if it held the lease, which is gone now.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Leases:
    """Take, renew and give back leases on Redis keys (arena's pairing owner, pairing's busy-registry rebuild)."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self._hold = redis.register_script(_HOLD)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)

    async def hold(self, key: str, holder: str, lease_ms: int) -> bool:
        """Take the lease for `holder`, or renew it if `holder` has it; False while another holds it."""
        return bool(await self._hold(keys=[key], args=[holder, lease_ms]))

    async def renew(self, key: str, holder: str, lease_ms: int) -> bool:
        """Extend `holder`'s lease by `lease_ms`; False if it holds the lease no more (never taken again here)."""
        return bool(await self._renew(keys=[key], args=[holder, lease_ms]))

    async def release(self, key: str, holder: str) -> bool:
        """Give the lease back if `holder` has it, so that another takes it at once; whether it had it."""
        return bool(await self._release(keys=[key], args=[holder]))
