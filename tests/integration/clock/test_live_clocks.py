"""Live (Fischer) clocks through the real service process, broker, Redis and PostgreSQL.

T-16 (an absent player's clock runs), T-19 (both absent), R-3 (never sat), AR-5 (boost), and
the start rules (GameStarted vs GameRequested order, first mover of the variant, moves before
the start). T-17 is in test_presence.py (it needs a slower time scale).
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from arbiter.contracts import clock_pb2
from arbiter.contracts import common_pb2 as common
from arbiter_tools.simulator.bench.readings import scrape
from tests.integration.clock.conftest import (
    ClockClient,
    actor,
    after,
    launch,
    ms,
    open_tools,
    whole_ms,
)
from tests.support.polling import eventually

# Every expected instant below comes from event timestamps, so only waiting depends on the scale.
TIME_SCALE = 5.0


@pytest.fixture(scope="module")
def stack(infra_env, tmp_path_factory):
    system = launch(infra_env, tmp_path_factory.mktemp("clock-live"), TIME_SCALE)
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def tools(stack):
    async for items in open_tools(stack):
        yield items


async def test_absent_player_clock_runs_and_never_sat_loses_unrated(tools, unique) -> None:
    site, tap, client, time = tools
    present_white, absent_white = unique("g-black-absent"), unique("g-white-absent")
    t0 = whole_ms(time.now())
    for game_id in (present_white, absent_white):
        await site.request(game_id, f"{game_id}-w", f"{game_id}-b", base=20)
        await site.start_game(game_id, f"{game_id}-w", f"{game_id}-b", at=t0)
    # The first mover moves; the second never shows (T-16: their clock runs from the move).
    await site.presence(present_white, f"{present_white}-w", True, at=t0)
    await time.sleep_until(after(t0, 1))
    await site.move(present_white, f"{present_white}-w", 1, at=after(t0, 1))
    # The first mover never shows; the second is there, waiting.
    await site.presence(absent_white, f"{absent_white}-b", True, at=t0)

    await time.sleep_until(after(t0, 5))
    running = await client.get(absent_white)
    assert running.side_to_move == common.COLOR_WHITE and running.white.running and not running.finished
    # White's clock has run since the start (T-16), up to the instant the reply was made.
    assert running.white.remaining_ms == 20_000 - (running.server_time.ToMilliseconds() - ms(t0))
    assert not running.white.online and running.black.online

    await eventually(lambda: tap.flags(present_white) and tap.flags(absent_white), "both flags")
    black_lost = tap.flags(present_white)[0]
    assert black_lost.loser_id == f"{present_white}-b"
    assert black_lost.reason == common.TERMINATION_NEVER_SAT and black_lost.loser_never_sat
    assert black_lost.flagged_at.ToMilliseconds() == ms(after(t0, 21))
    white_lost = tap.flags(absent_white)[0]
    assert white_lost.loser_id == f"{absent_white}-w" and white_lost.loser_never_sat
    assert white_lost.reason == common.TERMINATION_NEVER_SAT
    assert not tap.abandons(present_white) and not tap.abandons(absent_white)
    over = await client.get(present_white)
    assert over.finished and over.loser_id == f"{present_white}-b" and over.black.remaining_ms == 0


async def test_both_absent_is_abandoned_with_nobody_flagged(tools, unique) -> None:
    site, tap, client, time = tools
    game_id = unique("g-both-absent")
    t0 = whole_ms(time.now())
    await site.request(game_id, "nobody-w", "nobody-b", base=10)
    await site.start_game(game_id, "nobody-w", "nobody-b", at=t0)
    await eventually(lambda: tap.abandons(game_id), "GameAbandoned")
    abandoned = tap.abandons(game_id)[0]
    assert (abandoned.white_id, abandoned.black_id) == ("nobody-w", "nobody-b")
    assert abandoned.abandoned_at.ToMilliseconds() == ms(after(t0, 10))
    assert abandoned.meta.event_id == f"abandon:{game_id}"
    await asyncio.sleep(0.5)
    assert not tap.flags(game_id) and len(tap.abandons(game_id)) == 1
    over = await client.get(game_id)
    assert over.finished and over.termination == common.TERMINATION_BOTH_ABSENT


async def test_boosted_arena_game(tools, unique) -> None:
    site, tap, client, time = tools
    game_id = unique("g-boost")
    white, black = f"{game_id}-w", f"{game_id}-b"
    t0 = whole_ms(time.now())
    await site.request(game_id, white, black, base=180, inc=2, competition=common.COMPETITION_KIND_ARENA,
                       boost_allowed=True)
    await site.start_game(game_id, white, black, at=t0)
    await eventually(lambda: _running(client, game_id), "clock started")
    # AR-5: black boosts before their first move: increment removed, base halved (180 -> 90 s).
    await site.boost(game_id, black)
    await eventually(lambda: _boosted(client, game_id, "black"), "boost applied")
    # The play site hears of it at once: the cut shows, and GameFinished can say the game was boosted.
    await eventually(lambda: any(s.black_boosted for s in tap.states(game_id)), "boost's clock state")
    boosted = next(s for s in tap.states(game_id) if s.black_boosted)
    assert boosted.ply == 0 and not boosted.white_boosted and boosted.black_remaining_ms == 90_000
    assert boosted.meta.event_id == f"state:{game_id}:0:boost-black"
    await time.sleep_until(after(t0, 1))
    await site.move(game_id, white, 1, at=after(t0, 1))
    # Moves and boosts come on different topics (two consumers): the clock judges a boost by the
    # moves it has applied, so the late boost is sent once white's move is in.
    await eventually(lambda: any(s.ply == 1 for s in tap.states(game_id)), "white's move applied")
    await time.sleep_until(after(t0, 2))
    # White boosting after their own first move is too late: ignored.
    await site.boost(game_id, white)
    await site.move(game_id, black, 2, at=after(t0, 2))
    await eventually(lambda: any(s.ply == 2 for s in tap.states(game_id)), "black's move applied")
    state = next(s for s in tap.states(game_id) if s.ply == 2)
    assert state.side_to_move == common.COLOR_WHITE and state.black_boosted and not state.white_boosted
    assert state.black_remaining_ms == 89_000, "90 s boosted base, 1 s used, no increment"
    assert state.white_remaining_ms == 181_000, "180 s, 1 s used, +2 s increment"
    clock = await client.get(game_id)
    assert clock.black.boosted and clock.black.increment_ms == 0
    assert not clock.white.boosted and clock.white.increment_ms == 2_000
    await site.finish(game_id, white, black)
    await eventually(lambda: _finished(client, game_id), "finished")
    assert not tap.verdicts(game_id)


async def test_start_order_variant_early_moves_and_refusals(tools, unique) -> None:
    site, tap, client, time = tools
    late_request, english, casual, early = (unique(n) for n in ("g-late-req", "g-english", "g-casual", "g-early"))
    t0 = whole_ms(time.now())
    # GameStarted before GameRequested (different topics are not ordered).
    await site.start_game(late_request, "lr-w", "lr-b", at=t0)
    await site.start_game(english, "en-w", "en-b", at=t0, variant="english", base=60)
    await site.start_game(casual, "ca-w", "ca-b", at=t0, base=60, inc=1)
    # A move that overtakes its game's GameStarted waits for it.
    await time.sleep_until(after(t0, 1))
    await site.move(early, "ea-w", 1, at=after(t0, 1))
    await asyncio.sleep(0.3)
    await site.start_game(early, "ea-w", "ea-b", at=t0, base=60)
    await site.request(late_request, "lr-w", "lr-b", base=60)

    await eventually(lambda: _running(client, late_request), "started by the late GameRequested")
    clock = await client.get(late_request)
    elapsed = clock.server_time.ToMilliseconds() - ms(t0)
    assert clock.white.remaining_ms == 60_000 - elapsed, "the clock ran from started_at"
    english_clock = await client.get(english)
    assert english_clock.side_to_move == common.COLOR_BLACK and english_clock.black.running
    assert (await client.get(casual)).white.increment_ms == 1_000
    await eventually(lambda: _ply(client, early, 1), "early move applied")
    # A redelivered move changes nothing: black's reply, behind it on the game's partition, finds it taken.
    await site.move(early, "ea-w", 1, at=after(t0, 1))
    await site.move(early, "ea-b", 2, at=after(t0, 1.5))
    await eventually(lambda: _ply(client, early, 2), "black's reply applied")
    early_clock = await client.get(early)
    # White's time left after their move, running again since black's reply, up to the reply's server time.
    since_reply = early_clock.server_time.ToMilliseconds() - ms(after(t0, 1.5))
    assert early_clock.ply == 2 and early_clock.white.remaining_ms == 59_000 - since_reply

    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await client.get(unique("g-never-heard-of"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as fischer:
        await client.stub.Refuel(clock_pb2.RefuelRequest(actor=actor("lr-w"), game_id=late_request))
    assert fischer.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Triple Block" in (fischer.value.details() or "")
    for game_id, white, black in ((late_request, "lr-w", "lr-b"), (english, "en-w", "en-b"),
                                  (casual, "ca-w", "ca-b"), (early, "ea-w", "ea-b")):
        await site.finish(game_id, white, black)


async def test_a_time_control_the_rules_refuse_leaves_its_game_without_a_clock(stack, tools, unique) -> None:
    """0+0 and a Triple Block outside TB-5 cannot run: counted, logged, ignored; the games after them still start."""
    site, _tap, client, time = tools
    zero, bad_bank, fine = unique("g-zero"), unique("g-bad-bank"), unique("g-fine")
    metrics_url = stack.services["clock"].metrics_url
    before = scrape(metrics_url)
    t0 = whole_ms(time.now())
    await site.request(zero, "z-w", "z-b", base=0, inc=0)
    await site.start_game(bad_bank, "bb-w", "bb-b", at=t0, tb=(1, 60, False))
    await site.request(fine, "f-w", "f-b", base=60)
    await site.start_game(fine, "f-w", "f-b", at=t0)

    def invalid(kind: str, samples: dict[str, float]) -> float:
        wanted = (f'kind="{kind}"', 'outcome="invalid"')
        return sum(value for series, value in samples.items()
                   if series.startswith("arbiter_clock_events_total{") and all(label in series for label in wanted))

    def counted() -> bool:
        now = scrape(metrics_url)
        return invalid("requested", now) > invalid("requested", before) and invalid("started", now) > invalid(
            "started", before)

    await eventually(counted, "both refusals counted")
    await eventually(lambda: _running(client, fine), "the game after them started")
    for game_id in (zero, bad_bank):  # known, without a clock
        clock = await client.get(game_id)
        assert clock.kind == clock_pb2.CLOCK_KIND_UNSPECIFIED and not clock.white.running and not clock.black.running
    # A GameStarted with a bad control does not stop a requested game from starting on its own.
    late = unique("g-late-bad")
    await site.request(late, "lb-w", "lb-b", base=60)
    await site.start_game(late, "lb-w", "lb-b", at=t0, base=0, tb=(1, 60, False))
    await eventually(lambda: _running(client, late), "started on its GameRequested's control")
    assert (await client.get(late)).kind == clock_pb2.CLOCK_KIND_FISCHER
    for game_id, white, black in ((fine, "f-w", "f-b"), (late, "lb-w", "lb-b")):
        await site.finish(game_id, white, black)


async def _running(client: ClockClient, game_id: str) -> bool:
    try:
        clock = await client.get(game_id)
    except grpc.aio.AioRpcError:
        return False
    return clock.white.running or clock.black.running


async def _boosted(client: ClockClient, game_id: str, side: str) -> bool:
    clock = await client.get(game_id)
    return getattr(clock, side).boosted


async def _finished(client: ClockClient, game_id: str) -> bool:
    return (await client.get(game_id)).finished


async def _ply(client: ClockClient, game_id: str, ply: int) -> bool:
    try:
        return (await client.get(game_id)).ply == ply
    except grpc.aio.AioRpcError:
        return False

