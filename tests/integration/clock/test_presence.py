"""T-17 in the clock's own handlers and flag poller: after the first move a dropped player has 30 s to come back.

Returning at 29.5 s keeps the game; at 31.5 s it is lost by disconnection at 30.5 s (30 s after the
drop). Before the first move a drop changes nothing: only the clock decides (T-16, T-17).

The parts run in this process on the real Redis, PostgreSQL and Kafka, on a time the test moves
(ManualTimeSource): every instant below is exact, and a return "just in time" is in time whatever the
machine's load. The consumers' wiring is tests/integration/clock/test_live_clocks.py's; a move or return
still in transit at the deadline is FLAG_TRANSIT_SECONDS' business (test_flag_transit.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

from arbiter.contracts import common_pb2 as common
from tests.integration.clock.conftest import after, clock_in_process, ms, whole_ms


async def test_disconnection_after_first_move_gives_30_seconds(infra_env, unique) -> None:
    t0 = whole_ms(datetime.now(UTC))
    async with clock_in_process(infra_env, "presence", t0) as clock:
        site, time = clock.site, clock.time
        back_at_29, back_at_31, dropped_early = unique("g-back-29"), unique("g-back-31"), unique("g-drop-early")
        for game_id in (back_at_29, back_at_31):
            await site.request(game_id, f"{game_id}-w", f"{game_id}-b", base=300)
        await site.request(dropped_early, f"{dropped_early}-w", f"{dropped_early}-b", base=35)
        for game_id in (back_at_29, back_at_31, dropped_early):
            await site.start_game(game_id, f"{game_id}-w", f"{game_id}-b", at=t0)
            await site.presence(game_id, f"{game_id}-w", True, at=t0)
            await site.presence(game_id, f"{game_id}-b", True, at=t0)
        time.move_to(after(t0, 0.2))
        for game_id in (back_at_29, back_at_31, dropped_early):
            await site.move(game_id, f"{game_id}-w", 1, at=after(t0, 0.2))
        time.move_to(after(t0, 0.4))
        for game_id in (back_at_29, back_at_31):
            await site.move(game_id, f"{game_id}-b", 2, at=after(t0, 0.4))
        # Black drops before their first move: only their clock decides (T-17), not the disconnection window.
        await site.presence(dropped_early, f"{dropped_early}-b", False, at=after(t0, 0.4))
        time.move_to(after(t0, 0.5))
        for game_id in (back_at_29, back_at_31):
            await site.presence(game_id, f"{game_id}-w", False, at=after(t0, 0.5))

        time.move_to(after(t0, 5))
        assert await clock.decide() == 0
        armed = await clock.get(back_at_29)
        assert armed.white.disconnect_deadline.ToMilliseconds() == ms(after(t0, 30.5))
        assert not armed.white.online and armed.white.running, "an absent player's clock runs (T-16)"
        early = await clock.get(dropped_early)
        assert not early.black.HasField("disconnect_deadline") and not early.black.online

        time.move_to(after(t0, 29.5))
        await site.presence(back_at_29, f"{back_at_29}-w", True, at=after(t0, 29.5))
        time.move_to(after(t0, 30.499))
        await clock.decide()
        assert not await clock.verdicts(back_at_31), "still within the 30 s"
        time.move_to(after(t0, 30.5))
        await clock.decide()
        [lost] = await clock.verdicts(back_at_31)
        assert lost.loser_id == f"{back_at_31}-w" and lost.reason == common.TERMINATION_DISCONNECTION
        assert not lost.loser_never_sat
        assert lost.flagged_at.ToMilliseconds() == ms(after(t0, 30.5))
        time.move_to(after(t0, 31.5))
        # Back after the window: too late, the loss stands.
        await site.presence(back_at_31, f"{back_at_31}-w", True, at=after(t0, 31.5))

        time.move_to(after(t0, 33))
        await clock.decide()
        assert not await clock.verdicts(back_at_29), "back at 29.5 s: no loss (T-17)"
        still = await clock.get(back_at_29)
        assert not still.finished and still.white.online and not still.white.HasField("disconnect_deadline")
        assert not await clock.verdicts(dropped_early), "before the first move the clock decides, not the 30 s rule"
        over = await clock.get(back_at_31)
        assert over.finished and over.termination == common.TERMINATION_DISCONNECTION
        assert len(await clock.verdicts(back_at_31)) == 1

        time.move_to(after(t0, 35.199))
        await clock.decide()
        assert not await clock.verdicts(dropped_early)
        time.move_to(after(t0, 35.2))
        await clock.decide()
        [flagged] = await clock.verdicts(dropped_early)
        assert flagged.reason == common.TERMINATION_NEVER_SAT and flagged.loser_id == f"{dropped_early}-b"
        assert flagged.flagged_at.ToMilliseconds() == ms(after(t0, 35.2))
        assert not await clock.verdicts(back_at_29) and not await clock.verdicts(dropped_early, "abandon")
        await site.finish(back_at_29, f"{back_at_29}-w", f"{back_at_29}-b")
        assert (await clock.get(back_at_29)).finished
