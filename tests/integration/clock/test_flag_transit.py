"""A deadline waits `flag_transit_seconds` before it is decided: a move made before it may still be on its way.

In-process on real Redis and PostgreSQL. The play site stamps each move with its own time and the
broker may hold it for a moment; a move made before the deadline that reaches the service after it
still counts (T-16), while a game with no such move is flagged at its deadline's instant once the
transit has passed.
"""

from __future__ import annotations

import asyncio

from arbiter.kit.timesource import TimeSource
from services.clock import operations as ops
from services.clock.model import Status
from tests.integration.clock.conftest import (
    clock_backend, flagged, flags_saved, live_and_poller, polling, running_out,
)

TRANSIT_SECONDS = 1.0


async def test_a_move_made_before_the_deadline_that_arrives_after_it_counts(infra_env) -> None:
    async with clock_backend(infra_env, "transit", flag_transit_seconds=TRANSIT_SECONDS) as backend:
        pool, clock = backend.pool, TimeSource()
        live, poller = live_and_poller(backend, clock)
        async with polling(poller):
            now = int(clock.timestamp() * 1000)
            deadline = now + 100
            saved = running_out("transit-saved", now, 100)
            silent = running_out("transit-silent", now, 100)
            assert all(await live.save_many([saved, silent]))

            await asyncio.sleep(0.5)  # 400 ms past the deadline: inside the transit, nothing decided yet
            assert await flags_saved(pool, "transit-silent") == 0
            assert await flags_saved(pool, "transit-saved") == 0
            late_arrival = await live.load("transit-saved")
            assert late_arrival is not None
            now = int(clock.timestamp() * 1000)
            assert ops.apply_move(late_arrival, "w", 1, deadline - 50, now) == "applied"
            assert all(await live.save_many([late_arrival]))

            await asyncio.wait_for(flagged(pool, "transit-silent"), 30)
            decided_after_ms = int(clock.timestamp() * 1000) - deadline
            assert decided_after_ms >= TRANSIT_SECONDS * 1000
            row = await pool.fetchrow("SELECT flagged_at FROM verdicts WHERE game_id = $1", "transit-silent")
            assert int(row["flagged_at"].timestamp() * 1000) == deadline, "the verdict keeps the deadline's instant"

            await asyncio.sleep(0.3)
            assert await flags_saved(pool, "transit-saved") == 0, "the move made in time counts (T-16)"
            kept = await live.load("transit-saved")
            assert kept is not None and kept.status is Status.RUNNING and kept.ply == 1
