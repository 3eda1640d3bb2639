"""The arena service against real Kafka, Redis and PostgreSQL: pairing, scoring, boosts, rebuild (AR-1..AR-6)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import grpc
import pytest

from arbiter.contracts import arena_pb2 as ap
from arbiter.kit import events
from services.arena.handlers import CONSUMER
from tests.integration.arena.arena_support import ArenaUnderTest, actor
from tests.support.kafka import consumed
from tests.support.polling import eventually


def assert_no_cooldown_broken(games: list) -> None:
    """AR-3: the k+1-th game of a pair is requested at least 5*k minutes after their k-th ended."""
    met: dict[frozenset[str], list] = {}
    for game in games:  # request order
        pair = frozenset((game["white_id"], game["black_id"]))
        before = met.setdefault(pair, [])
        if before:
            assert all(g["finished_at"] is not None for g in before), f"{sorted(pair)} in two games at once"
            last = max(g["finished_at"] for g in before)
            assert game["requested_at"] >= last + timedelta(minutes=5 * len(before)), (sorted(pair), game["game_id"])
        before.append(game)


def ids(prefix: str, n: int) -> list[str]:
    tag = uuid.uuid4().hex[:6]
    return [f"{prefix}{tag}-{i:02d}" for i in range(n)]


async def test_players_are_paired_scored_requeued_and_the_board_matches_the_rules(arena: ArenaUnderTest) -> None:
    """AR-2 requeue at once, AR-3 no rematch inside the cooldown, AR-4/AR-5 scoring, AR-6 board."""
    creator, *players = ids("flow", 7)
    created = await arena.create(creator)
    assert created.state == ap.ARENA_STATE_RUNNING
    await arena.join(created.id, *players)
    first = await arena.wait_running(created.id, 3)
    assert len(first) == 3
    seated = [p for g in first for p in (g["white_id"], g["black_id"])]
    assert sorted(seated) == sorted(players)

    # AR-5: white boosts before moving; black moves first, then may not boost.
    game = first[0]
    reply = await arena.stub.Boost(ap.BoostRequest(actor=actor(game["white_id"]), arena_id=created.id,
                                                   game_id=game["game_id"]))
    assert (reply.base_ms, reply.increment_ms) == (90_000, 0)
    await arena.move(game["game_id"], game["black_id"], 2)
    await eventually(lambda: arena.db.fetchval("SELECT black_moved FROM arena_games WHERE game_id = $1",
                                               game["game_id"]))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await arena.stub.Boost(ap.BoostRequest(actor=actor(game["black_id"]), arena_id=created.id,
                                               game_id=game["game_id"]))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "AR-5" in refused.value.details()

    # Accepted by the arena, but the clock refused it (say the cut would have emptied the clock): the
    # play site reports the game unboosted.
    unpaid = first[2]
    await arena.stub.Boost(ap.BoostRequest(actor=actor(unpaid["black_id"]), arena_id=created.id,
                                           game_id=unpaid["game_id"]))

    # Results: the boosted white wins 4 (AR-5); a duplicate changes nothing.
    event = await arena.finish(first[0], "1-0", boosted=("white",))
    await arena.finish(first[1], "1-0", boosted=("white", "black"))  # never accepted: nothing
    await arena.finish(unpaid, "0-1")
    await eventually(lambda: arena.scored(created.id), until=lambda n: n == 3)
    await arena.republish(event)
    # AR-2: back in the queue at once and paired again; AR-3: the last opponents wait 5 minutes.
    second = await arena.wait_running(created.id, 2)
    assert len(second) >= 2
    assert_no_cooldown_broken(await arena.games(created.id))
    # The duplicate handled (the arena's group has committed past it) and nothing scored twice.
    await consumed(arena.settings.kafka_bootstrap_servers, CONSUMER, [events.GAME_FINISHED])
    assert await arena.scored(created.id) == 3
    board = await arena.service_board(created.id)
    assert board == await arena.pure_board(created.id)
    winner = next(row for row in board if row[1] == first[0]["white_id"])
    assert winner[2] == 4
    assert {row[1]: row[2] for row in board if row[1] in (first[1]["white_id"], first[1]["black_id"])} == {
        first[1]["white_id"]: 2, first[1]["black_id"]: 0}
    # The boost nobody paid for doubles nothing, and the stored game says it was not played boosted.
    assert next(row for row in board if row[1] == unpaid["black_id"])[2] == 2
    stored = await arena.db.fetchrow("SELECT white_boosted, black_boosted FROM arena_games WHERE game_id = $1",
                                     unpaid["game_id"])
    assert (stored["white_boosted"], stored["black_boosted"]) == (False, False)

    # Redis lost: the leaderboard comes back from PostgreSQL, equal.
    await arena.redis.flushall()
    assert await arena.service_board(created.id) == board
    # And play goes on: results of the running games are scored after the flush.
    for g in second:
        await arena.finish(g, "1-0")
    done = 3 + len(second)
    await eventually(lambda: arena.scored(created.id), until=lambda n: n == done)
    after = await eventually(lambda: arena.service_board(created.id), until=lambda b: sum(r[4] for r in b) == 2 * done)
    assert after == await arena.pure_board(created.id)
    # Everyone plays again, rematches only once their 5*k minutes are over (AR-3).
    third = await arena.wait_running(created.id, 3)
    assert len(third) == 3
    assert_no_cooldown_broken(await arena.games(created.id))



async def test_watch_sends_a_snapshot_then_each_change_with_the_top_of_the_leaderboard(arena: ArenaUnderTest) -> None:
    creator, a, b = ids("watch", 3)
    created = await arena.create(creator)
    changes: list[ap.ArenaChange] = []
    got_two = asyncio.Event()

    async def watch() -> None:
        async for change in arena.stub.WatchArena(ap.WatchArenaRequest(arena_id=created.id)):
            changes.append(change)
            if len([c for c in changes if c.change == "joined"]) == 2 and any(c.change == "paired" for c in changes):
                got_two.set()
                return

    task = asyncio.create_task(watch())
    await eventually(lambda: changes, "the snapshot")
    await arena.join(created.id, a, b)
    await asyncio.wait_for(got_two.wait(), 10)
    await task
    assert changes[0].change == "snapshot" and changes[0].arena.id == created.id
    joined = [c for c in changes if c.change == "joined"]
    assert {c.player_id for c in joined} == {a, b}
    last = changes[-1]
    assert last.arena.players == 2 and {r.player_id for r in last.top} == {a, b}
