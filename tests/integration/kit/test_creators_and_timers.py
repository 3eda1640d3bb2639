"""A-2's shared registry and the stored timers, on the real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from arbiter.kit.creators import claim_creator_slot, ensure_creator_registry, release_creator_slot
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.errors import FailedPrecondition
from arbiter.kit.metrics import Metrics
from arbiter.kit.timers import TimerPoller, schedule_timer
from arbiter.kit.timesource import TimeSource


async def test_concurrent_creates_by_one_creator_exactly_one_succeeds(database_url) -> None:
    """A-2: of twenty concurrent claims by one creator, one commits and the others are refused."""
    pool = await create_pool(database_url, "kit_registry_test", max_size=20)
    await ensure_creator_registry(pool)
    creator = f"p-{uuid.uuid4().hex[:8]}"

    async def create(index: int) -> str:
        async with pool.acquire() as connection, connection.transaction():
            await claim_creator_slot(connection, creator, "tournament", f"t-{index}")
            await asyncio.sleep(0.05)  # hold the transaction open so the claims really overlap
        return f"t-{index}"

    outcomes = await asyncio.gather(*(create(i) for i in range(20)), return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, str)]
    refusals = [o for o in outcomes if isinstance(o, FailedPrecondition)]
    assert len(winners) == 1 and len(refusals) == 19
    assert "A-2" in refusals[0].message and winners[0] in refusals[0].message

    async with pool.acquire() as connection:
        with pytest.raises(FailedPrecondition):
            await claim_creator_slot(connection, creator, "arena", "a-1")
        await release_creator_slot(connection, creator, winners[0])
        await claim_creator_slot(connection, creator, "arena", "a-1")
    await pool.close()


async def test_a_due_timer_fires_exactly_once_with_two_pollers(database_url) -> None:
    """Stored timers: two replicas polling together fire each due timer once."""
    pool = await create_pool(database_url, "kit_timers_test", max_size=10)
    await migrate(pool, "kit_timers_test", [])
    await pool.execute("CREATE TABLE IF NOT EXISTS fired (timer_id text NOT NULL)")
    await pool.execute("DELETE FROM fired")
    clock = TimeSource()
    async with pool.acquire() as connection:
        for index in range(200):
            due = clock.now() - timedelta(seconds=1) if index % 2 == 0 else clock.now() + timedelta(hours=1)
            await schedule_timer(connection, f"timer-{uuid.uuid4().hex}-{index}", "demo", due, {"i": index})

    async def record(connection, timer) -> None:
        await connection.execute("INSERT INTO fired VALUES ($1)", timer.timer_id)

    pollers = [TimerPoller(pool, {"demo": record}, clock, Metrics("kit_timers")) for _ in range(2)]
    counts = await asyncio.gather(*(p.fire_due() for p in pollers))
    assert sum(counts) == 100
    assert await pool.fetchval("SELECT count(*) FROM fired") == 100
    assert await pool.fetchval("SELECT count(DISTINCT timer_id) FROM fired") == 100
    assert sum(await asyncio.gather(*(p.fire_due() for p in pollers))) == 0
    await pool.close()
