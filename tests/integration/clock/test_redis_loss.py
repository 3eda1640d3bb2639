"""Redis killed (SIGKILL) and started again empty under a running clock service: nothing consumed is lost.

The clock service runs as a real process on its own throwaway redis-server. Games are in every
state a loss can catch them in: moving, about to flag, requested but not started, a move parked
before its game was known, finished a while ago. Redis is then killed and a new, empty one is
started on the same port. Every clock answers as before the loss (GetClock, exact times), the
flag fires at its deadline, later moves apply (not parked as moves of unknown games), the
requested game starts on its time control, the parked move is applied at the start, and the
finished game still reads finished and ignores a late move.
"""

from __future__ import annotations

import asyncpg
import pytest

from arbiter.contracts import common_pb2 as common
from arbiter_tools.simulator.bench.readings import scrape
from tests.integration.clock.conftest import after, launch, ms, open_tools, whole_ms
from tests.support.polling import eventually

# Expected instants come from event timestamps; only the waiting depends on the scale.
TIME_SCALE = 10.0


async def copies_of(database_url: str, game_ids: list[str]) -> dict[str, str]:
    """The status of each game's copy in PostgreSQL (schema clock)."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT game_id, status FROM clock.live_games WHERE game_id = ANY($1::text[])",
                                      game_ids)
    finally:
        await connection.close()
    return {row["game_id"]: row["status"] for row in rows}


@pytest.fixture
def lossy(infra_env, killable_redis, tmp_path):  # type: ignore[no-untyped-def]
    """The clock service on a Redis of its own (finished games are written back on demand only)."""
    stack = launch({**infra_env, "REDIS_URL": killable_redis.url}, tmp_path / "stack", TIME_SCALE,
                   REBUILD_OVER_SECONDS="0")
    try:
        yield stack, killable_redis
    finally:
        stack.stop()


async def test_live_clocks_survive_redis_killed_and_restarted_empty(lossy, infra_env, unique) -> None:
    stack, redis = lossy
    async for site, tap, client, time in open_tools(stack):
        moving, flagging, waiting, parked, finished = (
            unique(name) for name in ("moving", "flagging", "waiting", "parked", "finished"))
        t0 = whole_ms(time.now())
        for game_id, base in ((moving, 600), (flagging, 120), (finished, 600)):
            await site.request(game_id, f"{game_id}-w", f"{game_id}-b", base=base)
            await site.start_game(game_id, f"{game_id}-w", f"{game_id}-b", at=t0)
            await site.presence(game_id, f"{game_id}-b", True, at=t0)
        await site.request(waiting, f"{waiting}-w", f"{waiting}-b", base=300)
        await time.sleep_until(after(t0, 3))
        # Played before the game is known (topics are unordered): parked until its start.
        await site.move(parked, f"{parked}-w", 1, at=after(t0, 3))
        await site.move(moving, f"{moving}-w", 1, at=after(t0, 3))
        await time.sleep_until(after(t0, 8))
        await site.move(moving, f"{moving}-b", 2, at=after(t0, 8))
        await site.finish(finished, f"{finished}-w", f"{finished}-b")
        await eventually(lambda: any(s.ply == 2 for s in tap.states(moving)), "both moves applied")
        ids = [moving, flagging, waiting, parked, finished]
        expected = {moving: "running", flagging: "running", waiting: "requested", parked: "new",
                    finished: "over"}
        await eventually(lambda: _copies_are(infra_env["DATABASE_URL"], ids, expected),
                         "every record copied to PostgreSQL")
        assert not tap.flags(flagging)
        url = stack.services["clock"].metrics_url
        # A start finding Redis without the epoch PostgreSQL names (another stack of this session) rebuilt too.
        rebuilds_before = _rebuilds(url)

        redis.restart_empty()

        # The moving game's clock, exactly as before the loss: black spent 5 s, white runs since ply 2.
        clock = await client.get(moving)
        assert clock.ply == 2 and clock.side_to_move == common.COLOR_WHITE and not clock.finished
        assert clock.black.remaining_ms == 595_000 and not clock.black.running and clock.white.running
        assert clock.next_deadline.ToMilliseconds() == ms(after(t0, 8 + 597))
        assert clock.white.remaining_ms == clock.next_deadline.ToMilliseconds() - clock.server_time.ToMilliseconds()
        await eventually(lambda: _rebuilds(url) == rebuilds_before + 1, "the clock's Redis rebuilt once")

        # A move after the loss is applied on the rebuilt clock, not parked as a move of an unknown game.
        await time.sleep_until(after(t0, 20))
        await site.move(moving, f"{moving}-w", 3, at=after(t0, 20))
        await eventually(lambda: any(s.ply == 3 for s in tap.states(moving)), "the move after the loss")
        state = next(s for s in tap.states(moving) if s.ply == 3)
        assert (state.white_remaining_ms, state.black_remaining_ms) == (585_000, 595_000)

        # The game requested before the loss starts on its own time control.
        started_at = after(t0, 21)
        await site.start_game(waiting, f"{waiting}-w", f"{waiting}-b", at=started_at)
        await eventually(lambda: _running(client, waiting), "the requested game's clock runs")
        assert (await client.get(waiting)).next_deadline.ToMilliseconds() == ms(after(started_at, 300))

        # The move parked before the loss is applied when its game starts (white moved at t0 + 3).
        await site.request(parked, f"{parked}-w", f"{parked}-b", base=300)
        await site.start_game(parked, f"{parked}-w", f"{parked}-b", at=after(t0, 2))
        await eventually(lambda: any(s.ply == 1 for s in tap.states(parked)), "the parked move applied")
        state = next(s for s in tap.states(parked) if s.ply == 1)
        assert (state.white_remaining_ms, state.black_remaining_ms) == (299_000, 300_000)

        # The game finished before the loss reads finished, and a late move changes nothing.
        over = await client.get(finished)
        assert over.finished and over.ply == 0
        await site.move(finished, f"{finished}-w", 1)
        await eventually(lambda: _moves(url, "after_end") >= 1, "the late move refused as after the end")
        assert not tap.states(finished)

        # The flag fires at its deadline, once (white never moved, black was there: never sat).
        await eventually(lambda: tap.flags(flagging), "the flag after the loss")
        flag = tap.flags(flagging)[0]
        assert flag.flagged_at.ToMilliseconds() == ms(after(t0, 120))
        assert flag.loser_id == f"{flagging}-w" and flag.reason == common.TERMINATION_NEVER_SAT
        assert len(tap.flags(flagging)) == 1


async def _copies_are(database_url: str, ids: list[str], expected: dict[str, str]) -> bool:
    return await copies_of(database_url, ids) == expected


async def _running(client, game_id: str) -> bool:  # type: ignore[no-untyped-def]
    clock = await client.get(game_id)
    return clock.white.running or clock.black.running


def _rebuilds(url: str) -> float:
    return scrape(url).get('arbiter_hot_rebuilds_total{service="clock",what="clocks"}', 0.0)


def _moves(url: str, outcome: str) -> float:
    return scrape(url).get(f'arbiter_clock_moves_total{{outcome="{outcome}",service="clock"}}', 0.0)
