"""A deadline waits `flag_transit_seconds` before it is decided: a move made before it may still be on its way.

In-process on real Redis and PostgreSQL. The play site stamps each move with its own time and the
broker may hold it for a moment; a move made before the deadline that reaches the service after it
still counts (T-16), while a game with no such move is flagged at its deadline's instant once the
transit has passed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from arbiter.kit.timesource import ManualTimeSource
from services.clock import operations as ops
from services.clock.clocked_game import Status
from tests.integration.clock.conftest import clock_backend, flags_saved, live_and_poller, running_out, whole_ms

TRANSIT_SECONDS = 1.0


async def test_a_move_made_before_the_deadline_that_arrives_after_it_counts(infra_env) -> None:
    async with clock_backend(infra_env, "transit", flag_transit_seconds=TRANSIT_SECONDS) as backend:
        # The poller looks when the test says, on a time the test moves: "inside the transit" is exact.
        pool, clock = backend.pool, ManualTimeSource(whole_ms(datetime.now(UTC)))
        live, poller = await live_and_poller(backend, clock)
        now = clock.now_ms()
        deadline = now + 100
        saved = running_out("transit-saved", now, 100)
        silent = running_out("transit-silent", now, 100)
        assert all(await live.save_many([saved, silent]))

        clock.advance(0.5)  # 400 ms past the deadline: inside the transit, nothing decided yet
        assert await poller.fire_due() == 0
        assert await flags_saved(pool, "transit-silent") == 0
        assert await flags_saved(pool, "transit-saved") == 0
        late_arrival = await live.load("transit-saved")
        assert late_arrival is not None
        now = clock.now_ms()
        assert ops.apply_move(late_arrival, "w", 1, deadline - 50, now) == "applied"
        assert all(await live.save_many([late_arrival]))

        clock.advance(0.599)  # a millisecond short of the transit's end
        assert await poller.fire_due() == 0
        clock.advance(0.001)
        await poller.fire_due()
        assert clock.now_ms() - deadline == TRANSIT_SECONDS * 1000
        assert await flags_saved(pool, "transit-silent") == 1
        row = await pool.fetchrow("SELECT flagged_at FROM verdicts WHERE game_id = $1", "transit-silent")
        assert int(row["flagged_at"].timestamp() * 1000) == deadline, "the verdict keeps the deadline's instant"

        clock.advance(0.3)
        await poller.fire_due()
        assert await flags_saved(pool, "transit-saved") == 0, "the move made in time counts (T-16)"
        kept = await live.load("transit-saved")
        assert kept is not None and kept.status is Status.RUNNING and kept.ply == 1
