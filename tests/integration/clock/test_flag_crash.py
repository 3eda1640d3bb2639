"""SIGKILL of the clock service while 1,000 clocks run: every due flag still fires exactly once.

1,000 games flag over five seconds; the service is SIGKILLed with ~40% fired and restarted a few
seconds later. Every game must end with exactly one verdict (one event id), stamped with its own
deadline however late it fired. Kafka delivery is at-least-once: a relay killed between
publishing and deleting its outbox rows publishes them again with the same event id, which
consumers deduplicate (the count is printed). Two replicas racing: test_flag_race.py.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import asyncpg
import pytest

from arbiter.contracts import common_pb2 as common
from tests.integration.clock.conftest import launch, ms, open_tools, whole_ms
from tests.support.polling import eventually

GAMES = 1_000


@pytest.fixture(scope="module")
def stack(infra_env, tmp_path_factory):
    system = launch(infra_env, tmp_path_factory.mktemp("clock-crash"), 1.0, FLAG_LEASE_SECONDS="2")
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def tools(stack):
    async for items in open_tools(stack):
        yield items


async def test_every_flag_fires_once_after_a_sigkill(stack, tools, unique) -> None:
    site, tap, client, time = tools
    games = [unique(f"g-crash-{n:04d}") for n in range(GAMES)]
    # Opened 7 to 2 s ago, 5 ms apart, with 15 s on the clock: deadlines from now + 8 s to now + 13 s.
    t0 = whole_ms(time.now()) - timedelta(seconds=7)
    deadlines = {}
    opening = []
    for n, game_id in enumerate(games):
        started = t0 + timedelta(milliseconds=5 * n)
        deadlines[game_id] = ms(started) + 15_000
        opening.append(site.started_event(game_id, f"{game_id}-w", f"{game_id}-b", at=started, base=15))
    # Even games: black is there, so white loses for never sitting; odd games: nobody came (T-19).
    present = [site.presence_event(game_id, f"{game_id}-b", True, at=t0) for game_id in games[::2]]
    await site.send_many([*opening, *present])

    def fired() -> int:
        return sum(1 for game_id in games if tap.verdicts(game_id))

    await eventually(lambda: fired() >= 0.4 * GAMES, "40% fired", timeout=40)
    stack.kill_service("clock")
    killed_at = fired()
    # Down for a few seconds while flags keep falling due; they fire late, once, after the restart.
    await asyncio.sleep(2)
    stack.start_service("clock")
    await eventually(lambda: fired() == GAMES, "every flag after the restart", timeout=60)

    duplicates = 0
    for n, game_id in enumerate(games):
        verdicts = tap.verdicts(game_id)
        ids = {v.meta.event_id for v in verdicts}
        assert len(ids) == 1, f"{game_id}: {ids}"
        duplicates += len(verdicts) - 1
        if n % 2 == 0:
            (flag,) = {v.meta.event_id: v for v in tap.flags(game_id)}.values()
            assert flag.meta.event_id == f"flag:{game_id}" and flag.loser_id == f"{game_id}-w"
            assert flag.reason == common.TERMINATION_NEVER_SAT and flag.loser_never_sat
            assert flag.flagged_at.ToMilliseconds() == deadlines[game_id]
            assert not tap.abandons(game_id)
        else:
            (abandon,) = {v.meta.event_id: v for v in tap.abandons(game_id)}.values()
            assert abandon.abandoned_at.ToMilliseconds() == deadlines[game_id]
            assert not tap.flags(game_id)
    connection = await asyncpg.connect(stack.database_url)
    try:
        rows = await connection.fetch(
            "SELECT outcome, count(*) AS n FROM clock.verdicts WHERE game_id = ANY($1::text[]) GROUP BY outcome", games
        )
    finally:
        await connection.close()
    assert Counter({r["outcome"]: r["n"] for r in rows}) == Counter(flagged=GAMES // 2, abandoned=GAMES // 2)
    print(f"\n{GAMES} flags, {killed_at} fired before the SIGKILL, "
          f"{duplicates} redelivered duplicates (same event id)")
