"""The kit's Redis lease against a real server: one holder at a time, renewed only by its holder,
given back only by its holder, free again once it lapses."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis import asyncio as aioredis

from arbiter.kit.lease import Leases
from arbiter.kit.redisclient import connect_redis
from tests.support.polling import eventually


@pytest.fixture
async def lease(redis_url: str) -> AsyncIterator[tuple[aioredis.Redis, str, Leases]]:
    """A Redis client, a fresh lease key (deleted after the test) and the kit's leases on that server."""
    client = connect_redis(redis_url)
    key = f"test-lease-{uuid.uuid4().hex[:8]}"
    try:
        yield client, key, Leases(client)
    finally:
        await client.delete(key)
        await client.aclose()


async def test_one_holder_at_a_time_and_only_the_holder_renews_or_gives_it_back(lease) -> None:
    client, key, leases = lease
    assert await leases.hold(key, "replica-a", 60_000)
    assert not await leases.hold(key, "replica-b", 60_000)
    assert not await leases.renew(key, "replica-b", 60_000)
    assert not await leases.release(key, "replica-b")
    assert await client.get(key) == b"replica-a"

    # Holding again renews: the lease runs for the new length from now.
    assert await leases.hold(key, "replica-a", 600_000)
    assert await client.pttl(key) > 60_000
    assert await leases.renew(key, "replica-a", 900_000)
    assert await client.pttl(key) > 600_000

    assert await leases.release(key, "replica-a")
    assert await client.get(key) is None
    assert not await leases.release(key, "replica-a")
    assert await leases.hold(key, "replica-b", 60_000)


async def test_a_lapsed_lease_is_free_for_another_and_its_old_holder_cannot_renew_it(lease) -> None:
    client, key, leases = lease
    assert await leases.hold(key, "replica-a", 50)
    await eventually(lambda: client.exists(key), "the lease lapsed", until=lambda exists: not exists)
    # A renewal never takes a lapsed lease again: its holder's work may have been spoiled meanwhile.
    assert not await leases.renew(key, "replica-a", 60_000)
    assert await client.get(key) is None
    assert await leases.hold(key, "replica-b", 60_000)
    assert not await leases.renew(key, "replica-a", 60_000)
    assert await client.get(key) == b"replica-b"
