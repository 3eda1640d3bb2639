"""Two replicas scoring a round's last games at the same moment: the round moves on at once, not at the next scan.

Each replica's statement sees the other's game as open (READ COMMITTED: one snapshot per
statement), so neither finds the round complete on its own. A replica that does not consume
every result partition looks again once it has committed; the later of the two then sees both.
The race is made certain here: a transaction holds one game's row, so the first replica's
statement waits inside, after its snapshot, while the second replica commits.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio as aioredis

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.metrics import Metrics
from arbiter.kit.timesource import TimeSource
from services.pairing.busy import BusyRegistry
from services.pairing.handlers import ResultDesk, from_finished
from services.pairing.metrics import PairingMetrics
from services.pairing.watch import WatchHub
from tests.integration.pairing.pairing_support import insert_round_games, private_pairing_schema


def _finished(game_id: str, white: str, black: str) -> ev.GameFinished:
    event = ev.GameFinished(game_id=game_id, white_id=white, black_id=black, result=common.GAME_RESULT_DRAW,
                            termination=common.TERMINATION_DRAW_AGREED, white_sat=True, black_sat=True,
                            competition=common.CompetitionRef(kind=common.COMPETITION_KIND_TOURNAMENT))
    event.meta.event_id = f"race-{game_id}"
    return event


async def _waiting_on_a_lock(pool, timeout: float = 20.0) -> None:
    """Until a statement of `pool` (its connections share one application name) waits on a lock."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    name = await pool.fetchval("SELECT current_setting('application_name')")
    while not await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
                                  " AND wait_event_type = 'Lock'", name):
        assert loop.time() < deadline, "the first replica's statement never waited on the held game"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("alone", [False, True], ids=["replicas share the partitions", "one replica has them all"])
async def test_the_later_of_two_replicas_scoring_a_rounds_last_games_moves_the_round_on(
        infra_env, database_url, alone: bool) -> None:
    tag = uuid.uuid4().hex[:8]
    seats = [(f"t_{tag}-r1-b{board}-g1", f"{tag}-w{board}", f"{tag}-b{board}") for board in (1, 2, 3)]
    redis = aioredis.from_url(infra_env["REDIS_URL"])
    poked: dict[str, list[str]] = {"first": [], "second": []}

    def desk(name: str, pool) -> ResultDesk:
        return ResultDesk(pool, TimeSource(), BusyRegistry(redis, 600), WatchHub(redis),
                          PairingMetrics.create(Metrics(f"race-{name}")), poked[name].append, "pairing",
                          alone=lambda: alone)

    try:
        async with private_pairing_schema(database_url) as pool:
            # Board 1 is scored already; boards 2 and 3 are the round's last games.
            tournament_id = await insert_round_games(pool, tag, [(*seats[0], True), (*seats[1], False),
                                                                 (*seats[2], False)])
            first, second = desk("first", pool), desk("second", pool)
            async with pool.acquire() as holder:
                holding = holder.transaction()
                await holding.start()
                await holder.execute("SELECT 1 FROM games WHERE game_id = $1 FOR UPDATE", seats[1][0])
                scoring = asyncio.create_task(first.apply([from_finished(_finished(*seats[1]))]))
                await _waiting_on_a_lock(pool)
                assert await second.apply([from_finished(_finished(*seats[2]))]) == "handled"
                # The first replica has not committed: the second cannot see the round complete.
                assert poked["second"] == []
                await holding.rollback()
            assert await asyncio.wait_for(scoring, 20) == "handled"
            assert await pool.fetchval("SELECT bool_and(finished) FROM games WHERE tournament_id = $1", tournament_id)
            # Sharing the partitions, the first replica looks again once committed and sees both games.
            # Alone, it has no reason to (the race cannot happen): the round would wait for the scan.
            assert poked["first"] == ([] if alone else [tournament_id])
    finally:
        await redis.aclose()


async def test_a_result_without_an_event_id_is_applied_once_not_refused_for_ever(infra_env, database_url) -> None:
    """A producer's bug (no event id) must not hold the partition: deduplicated by game and topic instead."""
    tag = uuid.uuid4().hex[:8]
    seats = [(f"t_{tag}-r1-b{board}-g1", f"{tag}-w{board}", f"{tag}-b{board}") for board in (1, 2)]
    redis = aioredis.from_url(infra_env["REDIS_URL"])
    try:
        async with private_pairing_schema(database_url) as pool:
            await insert_round_games(pool, tag, [(*seats[0], False), (*seats[1], False)])
            desk = ResultDesk(pool, TimeSource(), BusyRegistry(redis, 600), WatchHub(redis),
                              PairingMetrics.create(Metrics("no-id")), lambda _: None, "pairing", alone=lambda: True)
            anonymous = _finished(*seats[0])
            anonymous.meta.event_id = ""
            # And stamped with a time no date can hold: the result still counts.
            anonymous.meta.occurred_at.seconds = 10**13
            assert await desk.on_finished([anonymous, _finished(*seats[1])]) == "handled"
            assert await desk.on_finished([anonymous]) == "duplicate"  # the redelivery
            assert await pool.fetchval("SELECT count(*) FROM games WHERE finished") == 2
            assert await pool.fetchval("SELECT decided_by FROM games WHERE game_id = $1", seats[0][0]) == (
                f"game.finished:{seats[0][0]}/game.finished/no-event-id")
    finally:
        await redis.aclose()
