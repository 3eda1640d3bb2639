"""The result desk on a batch as the one consumer hands it over: other competitions' games and first moves (AR-5).

The desk runs here on the module's service database (the service around it pairs the arena);
its handlers are called directly, so both sides' first moves are surely in one batch.
"""

from __future__ import annotations

import uuid

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from services.arena.clients import RatingCache
from services.arena.handlers import ResultDesk
from services.arena.hot import HotStore
from services.arena.lifecycle import Lifecycle
from services.arena.matchmaker import Matchmaker
from services.arena.metrics import ArenaMetrics
from services.arena.watch import WatchHub
from tests.integration.arena.arena_support import ArenaUnderTest


def desk_of(arena: ArenaUnderTest) -> ResultDesk:
    """A second desk on the service's database and Redis (what another replica would run)."""
    hot = HotStore(arena.redis)
    outbox = Outbox("arena", arena.clock)
    hub = WatchHub(arena.redis)
    matchmaker = Matchmaker(arena.db, hot, outbox, arena.clock, RatingCache(None, 10.0), hub,
                            Lifecycle(outbox, hot, arena.clock), ArenaMetrics.create(Metrics("arena")),
                            arena.settings, replica="foreign-test")
    return ResultDesk(arena.db, hot, outbox, arena.clock, matchmaker, hub)


def move(game_id: str, player: str, ply: int) -> ev.MoveMade:
    """A move as the play site reports it."""
    event = ev.MoveMade(game_id=game_id, player_id=player, ply=ply, move="32-28")
    event.meta.event_id = uuid.uuid4().hex
    return event


async def test_both_first_moves_in_one_batch_count_and_foreign_events_change_nothing(arena: ArenaUnderTest) -> None:
    tag = uuid.uuid4().hex[:6]
    created = await arena.create(f"c{tag}")
    await arena.join(created.id, f"w{tag}", f"b{tag}")
    game = (await arena.wait_running(created.id, 1))[0]
    white, black = game["white_id"], game["black_id"]
    desk = desk_of(arena)
    before = await arena.db.fetchval("SELECT count(*) FROM arena_games")

    # A tournament's results never reach PostgreSQL or Redis, whatever their game ids say.
    foreign = ev.GameFinished(game_id=game["game_id"], competition=cm.CompetitionRef(
        kind=cm.COMPETITION_KIND_TOURNAMENT, id="t_1"), white_id=white, black_id=black,
        result=cm.GAME_RESULT_WHITE_WINS)
    foreign.meta.event_id = uuid.uuid4().hex
    assert await desk.on_finished([foreign]) == "ignored"

    # AR-5: white's ply 1 and black's ply 2 of one game in one batch both count (one statement per
    # batch must not apply only one of a game's rows); other games' and later moves change nothing.
    batch = [move(f"t_1/{tag}", "x", 1), move(game["game_id"], white, 1), move(f"casual-{tag}", "y", 2),
             move(game["game_id"], black, 2), move(game["game_id"], white, 3)]
    assert await desk.on_moves(batch) == "handled"
    row = await arena.db.fetchrow("SELECT white_moved, black_moved, result FROM arena_games WHERE game_id = $1",
                                  game["game_id"])
    assert (row["white_moved"], row["black_moved"], row["result"]) == (True, True, None)
    assert await arena.db.fetchval("SELECT count(*) FROM arena_games") == before
    # Delivered again: still moved.
    assert await desk.on_moves(batch) == "handled"
    assert await arena.db.fetchval("SELECT white_moved AND black_moved FROM arena_games WHERE game_id = $1",
                                   game["game_id"])


async def test_a_result_with_what_this_build_cannot_read_is_scored_not_refused_for_ever(arena: ArenaUnderTest) -> None:
    """No event id, a termination number this build does not know and a finish time no date can be:
    the game is scored (the result itself is readable), now standing in for the time."""
    tag = uuid.uuid4().hex[:6]
    created = await arena.create(f"c{tag}")
    await arena.join(created.id, f"w{tag}", f"b{tag}")
    game = (await arena.wait_running(created.id, 1))[0]
    odd = ev.GameFinished(game_id=game["game_id"], competition=cm.CompetitionRef(
        kind=cm.COMPETITION_KIND_ARENA, id=created.id), white_id=game["white_id"], black_id=game["black_id"],
        result=cm.GAME_RESULT_WHITE_WINS, termination=999)  # type: ignore[arg-type]
    odd.finished_at.seconds = 10**13
    desk = desk_of(arena)
    assert await desk.on_finished([odd]) == "handled"
    assert await desk.on_finished([odd]) == "duplicate"
    row = await arena.db.fetchrow("SELECT result, termination, finished_at FROM arena_games WHERE game_id = $1",
                                  game["game_id"])
    assert row["result"] is not None and row["termination"] == "TERMINATION_UNSPECIFIED"
    assert abs((row["finished_at"] - arena.clock.now()).total_seconds()) < 3600
    assert await arena.scored(created.id) == 1
