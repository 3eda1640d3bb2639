"""T-17 through the real service: after the first move a dropped player has 30 s to come back.

Returning at 29 s keeps the game; at 31 s it is lost by disconnection at 30 s. Before the
first move a drop changes nothing: only the clock decides (T-16, T-17).
"""

from __future__ import annotations

import pytest

from arbiter.contracts import common_pb2 as common
from tests.integration.clock.conftest import after, eventually, launch, ms, open_tools, whole_ms

# Real time: the return at 29 s reaches the service with a whole second to spare before the 30 s
# deadline. The embedded broker can hold a consumer's fetch for ~250 ms, and on a busy host (the
# whole suite on two cores) 500 ms was once not enough. A move or return still in transit at the
# deadline is FLAG_TRANSIT_SECONDS' business (off by default; tests/integration/clock/test_flag_transit.py).
TIME_SCALE = 1.0


@pytest.fixture(scope="module")
def stack(infra_env, tmp_path_factory):
    system = launch(infra_env, tmp_path_factory.mktemp("clock-presence"), TIME_SCALE)
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def tools(stack):
    async for items in open_tools(stack):
        yield items


async def test_disconnection_after_first_move_gives_30_seconds(tools, unique) -> None:
    site, tap, client, time = tools
    back_at_29, back_at_31, dropped_early = unique("g-back-29"), unique("g-back-31"), unique("g-drop-early")
    t0 = whole_ms(time.now())
    for game_id in (back_at_29, back_at_31):
        await site.request(game_id, f"{game_id}-w", f"{game_id}-b", base=300)
    await site.request(dropped_early, f"{dropped_early}-w", f"{dropped_early}-b", base=35)
    for game_id in (back_at_29, back_at_31, dropped_early):
        await site.start_game(game_id, f"{game_id}-w", f"{game_id}-b", at=t0)
        await site.presence(game_id, f"{game_id}-w", True, at=t0)
        await site.presence(game_id, f"{game_id}-b", True, at=t0)
    await time.sleep_until(after(t0, 0.2))
    for game_id in (back_at_29, back_at_31, dropped_early):
        await site.move(game_id, f"{game_id}-w", 1, at=after(t0, 0.2))
    await time.sleep_until(after(t0, 0.4))
    for game_id in (back_at_29, back_at_31):
        await site.move(game_id, f"{game_id}-b", 2, at=after(t0, 0.4))
    # Black drops before their first move: only their clock decides (T-17), no 30 s rule.
    await site.presence(dropped_early, f"{dropped_early}-b", False, at=after(t0, 0.4))
    await time.sleep_until(after(t0, 0.5))
    for game_id in (back_at_29, back_at_31):
        await site.presence(game_id, f"{game_id}-w", False, at=after(t0, 0.5))

    await time.sleep_until(after(t0, 5))
    armed = await client.get(back_at_29)
    assert armed.white.disconnect_deadline.ToMilliseconds() == ms(after(t0, 30.5))
    assert not armed.white.online and armed.white.running, "an absent player's clock runs (T-16)"
    early = await client.get(dropped_early)
    assert not early.black.HasField("disconnect_deadline") and not early.black.online

    await time.sleep_until(after(t0, 29.5))
    await site.presence(back_at_29, f"{back_at_29}-w", True, at=after(t0, 29.5))
    await eventually(lambda: tap.flags(back_at_31), 10, "disconnection flag")
    lost = tap.flags(back_at_31)[0]
    assert lost.loser_id == f"{back_at_31}-w" and lost.reason == common.TERMINATION_DISCONNECTION
    assert not lost.loser_never_sat
    assert lost.flagged_at.ToMilliseconds() == ms(after(t0, 30.5))
    await time.sleep_until(after(t0, 31.5))
    # Back at 31 s: too late, the loss stands.
    await site.presence(back_at_31, f"{back_at_31}-w", True, at=after(t0, 31.5))

    await time.sleep_until(after(t0, 33))
    assert not tap.flags(back_at_29), "back at 29 s: no loss (T-17)"
    still = await client.get(back_at_29)
    assert not still.finished and still.white.online and not still.white.HasField("disconnect_deadline")
    assert not tap.flags(dropped_early), "before the first move the clock decides, not the 30 s rule"
    over = await client.get(back_at_31)
    assert over.finished and over.termination == common.TERMINATION_DISCONNECTION and len(tap.flags(back_at_31)) == 1

    await eventually(lambda: tap.flags(dropped_early), 10, "the early dropper's clock runs out")
    flagged = tap.flags(dropped_early)[0]
    assert flagged.reason == common.TERMINATION_NEVER_SAT and flagged.loser_id == f"{dropped_early}-b"
    assert flagged.flagged_at.ToMilliseconds() == ms(after(t0, 35.2))
    await site.finish(back_at_29, f"{back_at_29}-w", f"{back_at_29}-b")
