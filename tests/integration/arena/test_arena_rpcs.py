"""Every ArenaService RPC refuses bad input with a clear status and changes nothing; the arena's life (AR-1, A-2)."""

from __future__ import annotations

import asyncio
import base64
import urllib.request
import uuid
from datetime import timedelta

import grpc
import pytest
from aiokafka import AIOKafkaConsumer

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import common_pb2 as cm
from arbiter.kit import events
from arbiter.kit.events import timestamp
from tests.integration.arena.arena_support import ArenaUnderTest, actor, arena_finished, arena_settings
from tests.support.polling import eventually

GUEST = cm.ACCOUNT_KIND_GUEST
BOT = cm.ACCOUNT_KIND_BOT


def tag() -> str:
    return uuid.uuid4().hex[:6]


async def scrape_metrics(arena: ArenaUnderTest) -> str:
    """The service's /metrics page."""
    url = f"http://127.0.0.1:{arena.settings.metrics_port}/metrics"

    def read() -> str:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.read().decode()

    return await asyncio.to_thread(read)


async def state_of_everything(arena: ArenaUnderTest) -> tuple:
    """Counts that any accepted change would move."""
    return tuple(await arena.db.fetchrow(
        "SELECT (SELECT count(*) FROM arenas) a, (SELECT count(*) FROM arena_players) p,"
        " (SELECT count(*) FILTER (WHERE active) FROM arena_players) pa,"
        " (SELECT count(*) FROM arena_games) g,"
        " (SELECT count(*) FROM arena_games WHERE white_boosted OR black_boosted) b,"
        " (SELECT count(*) FROM outbox) o, (SELECT count(*) FROM registry.live_competitions) r"
    ))


async def test_bad_input_on_every_rpc_is_refused_clearly_and_changes_nothing(arena: ArenaUnderTest) -> None:
    t = tag()
    creator, player, outsider = f"c{t}", f"p{t}", f"o{t}"
    created = await arena.create(creator)
    await arena.join(created.id, player, f"q{t}")
    game = (await arena.wait_running(created.id, 1))[0]
    await arena.move(game["game_id"], game["white_id"], 1)
    await eventually(lambda: arena.db.fetchval("SELECT white_moved FROM arena_games WHERE game_id = $1",
                                               game["game_id"]))
    s = arena.stub
    soon = timestamp(arena.clock.now() + timedelta(minutes=2))
    far = timestamp(arena.clock.now() + timedelta(days=15))
    cases = [
        # CreateArena, AR-1, R-6, names, variants.
        (s.CreateArena, ap.CreateArenaRequest(settings=arena_settings()), "INVALID_ARGUMENT", "player_id"),
        (s.CreateArena, ap.CreateArenaRequest(actor=cm.Actor(player_id=f"n{t}"), settings=arena_settings()),
         "INVALID_ARGUMENT", "A-1"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"g{t}", GUEST), settings=arena_settings()),
         "PERMISSION_DENIED", "A-1"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"b{t}", BOT), settings=arena_settings()),
         "PERMISSION_DENIED", "A-1"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(creator), settings=arena_settings()),
         "FAILED_PRECONDITION", "A-2"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(minutes=9)),
         "INVALID_ARGUMENT", "AR-1"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(minutes=481)),
         "INVALID_ARGUMENT", "AR-1"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(starts_at=soon)),
         "INVALID_ARGUMENT", "T-4"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(starts_at=far)),
         "INVALID_ARGUMENT", "T-4"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(name=" ")),
         "INVALID_ARGUMENT", "name"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(name="n" * 81)),
         "INVALID_ARGUMENT", "80"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=ap.ArenaSettings(
            name="no clock", variant="international", duration_minutes=60)), "INVALID_ARGUMENT", "time_control"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=arena_settings(base=0, increment=0)),
         "INVALID_ARGUMENT", "R-6"),
        (s.CreateArena, ap.CreateArenaRequest(actor=actor(f"x{t}"), settings=ap.ArenaSettings(
            name="v", variant="chess", duration_minutes=60, time_control=cm.FischerControl(base_seconds=60))),
         "INVALID_ARGUMENT", "chess"),
        # GetArena
        (s.GetArena, ap.GetArenaRequest(), "INVALID_ARGUMENT", "arena_id"),
        (s.GetArena, ap.GetArenaRequest(arena_id=f"a_none{t}"), "NOT_FOUND", "no arena"),
        (s.GetArena, ap.GetArenaRequest(arena_id="a" * 200), "INVALID_ARGUMENT", "128"),
        # JoinArena
        (s.JoinArena, ap.JoinArenaRequest(arena_id=created.id), "INVALID_ARGUMENT", "player_id"),
        (s.JoinArena, ap.JoinArenaRequest(actor=actor(f"g{t}", GUEST), arena_id=created.id),
         "PERMISSION_DENIED", "A-1"),
        (s.JoinArena, ap.JoinArenaRequest(actor=actor(player)), "INVALID_ARGUMENT", "arena_id"),
        (s.JoinArena, ap.JoinArenaRequest(actor=actor(player), arena_id=f"a_none{t}"), "NOT_FOUND", "no arena"),
        (s.JoinArena, ap.JoinArenaRequest(actor=actor(player), arena_id=created.id), "ALREADY_EXISTS", "already"),
        # LeaveArena
        (s.LeaveArena, ap.LeaveArenaRequest(actor=actor(outsider), arena_id=created.id), "FAILED_PRECONDITION",
         "not in arena"),
        (s.LeaveArena, ap.LeaveArenaRequest(actor=actor(f"b{t}", BOT), arena_id=created.id), "PERMISSION_DENIED",
         "A-1"),
        (s.LeaveArena, ap.LeaveArenaRequest(actor=actor(player), arena_id=f"a_none{t}"), "NOT_FOUND", "no arena"),
        # Boost: AR-5
        (s.Boost, ap.BoostRequest(actor=actor(game["white_id"]), arena_id=created.id), "INVALID_ARGUMENT", "game_id"),
        (s.Boost, ap.BoostRequest(actor=actor(game["white_id"]), arena_id=created.id, game_id="nope"), "NOT_FOUND",
         "no game"),
        (s.Boost, ap.BoostRequest(actor=actor(outsider), arena_id=created.id, game_id=game["game_id"]),
         "PERMISSION_DENIED", "only its players"),
        (s.Boost, ap.BoostRequest(actor=actor(game["white_id"]), arena_id=created.id, game_id=game["game_id"]),
         "FAILED_PRECONDITION", "AR-5"),
        (s.Boost, ap.BoostRequest(actor=actor(f"g{t}", GUEST), arena_id=created.id, game_id=game["game_id"]),
         "PERMISSION_DENIED", "A-1"),
        # GetLeaderboard
        (s.GetLeaderboard, ap.GetLeaderboardRequest(), "INVALID_ARGUMENT", "arena_id"),
        (s.GetLeaderboard, ap.GetLeaderboardRequest(arena_id=created.id, page=cm.PageRequest(page_size=-1)),
         "INVALID_ARGUMENT", "negative"),
        (s.GetLeaderboard, ap.GetLeaderboardRequest(arena_id=created.id, page=cm.PageRequest(page_token="%%%")),
         "INVALID_ARGUMENT", "page_token"),
        # An offset past what Redis takes (the service's own token format, forged).
        (s.GetLeaderboard, ap.GetLeaderboardRequest(arena_id=created.id, page=cm.PageRequest(
            page_token=base64.urlsafe_b64encode(f"o:{10**30}".encode()).decode())), "INVALID_ARGUMENT", "page_token"),
        (s.GetLeaderboard, ap.GetLeaderboardRequest(arena_id=created.id, around_player_id=outsider), "NOT_FOUND",
         "never joined"),
        (s.GetLeaderboard, ap.GetLeaderboardRequest(arena_id=created.id, around_player_id=player,
                                                    page=cm.PageRequest(page_token="bzox")),
         "INVALID_ARGUMENT", "either"),
    ]
    before = await state_of_everything(arena)
    for call, request, code, words in cases:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(request)
        assert refused.value.code().name == code, (type(request).__name__, refused.value.details())
        assert words in refused.value.details(), (type(request).__name__, refused.value.details())
    # WatchArena is a stream: the refusal comes with the first read.
    for request, code in ((ap.WatchArenaRequest(), "INVALID_ARGUMENT"),
                          (ap.WatchArenaRequest(arena_id=f"a_none{t}"), "NOT_FOUND")):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in s.WatchArena(request):
                pass
        assert refused.value.code().name == code
    assert await state_of_everything(arena) == before


async def test_leave_during_a_game_takes_effect_when_it_ends_and_rejoining_keeps_the_points(
    arena: ArenaUnderTest,
) -> None:
    """AR-2: leave and join at any time; a leave during a game takes effect at its end."""
    t = tag()
    created = await arena.create(f"c{t}")
    a, b = f"a{t}", f"b{t}"
    await arena.join(created.id, a, b)
    game = (await arena.wait_running(created.id, 1))[0]
    left = await arena.stub.LeaveArena(ap.LeaveArenaRequest(actor=actor(a), arena_id=created.id))
    assert left.leaves_after_game
    c = f"z{t}"
    await arena.join(created.id, c)
    winner = "1-0" if game["white_id"] == a else "0-1"
    await arena.finish(game, winner)
    await eventually(lambda: arena.scored(created.id), until=lambda n: n == 1)
    # b waits and meets c; a is not requeued.
    nxt = await arena.wait_running(created.id, 1)
    assert {nxt[0]["white_id"], nxt[0]["black_id"]} == {b, c}
    board = await arena.service_board(created.id)
    assert next(r for r in board if r[1] == a)[2] == 2
    # Rejoining: a is back with their 2 points, waiting (b and c are playing).
    await arena.join(created.id, a)
    waiting = await arena.redis.zrange(f"arena:{{{created.id}}}:queue", 0, -1)
    assert waiting == [a.encode()]
    reply = await arena.stub.GetLeaderboard(ap.GetLeaderboardRequest(arena_id=created.id, around_player_id=a,
                                                                     page=cm.PageRequest(page_size=1)))
    assert [(r.player_id, r.rank, r.points) for r in reply.rows] == [(a, 1, 2)]
    assert (await arena.stub.GetArena(ap.GetArenaRequest(arena_id=created.id))).players == 3


async def test_a_scheduled_arena_starts_ends_lets_running_games_count_and_finishes(arena: ArenaUnderTest) -> None:
    """AR-1: scheduled start, no pairing after the end, running games count, ArenaFinished, A-2 slot freed."""
    t = tag()
    creator = f"c{t}"
    # A minute over AR-1's five (one real second at TIME_SCALE 60): the call may take that long on a busy host.
    starts = arena.clock.now() + timedelta(minutes=6)
    created = await arena.stub.CreateArena(ap.CreateArenaRequest(
        actor=actor(creator), settings=arena_settings(minutes=10, starts_at=timestamp(starts))))
    assert created.state == ap.ARENA_STATE_SCHEDULED
    players = [f"p{t}-{i}" for i in range(4)]
    await arena.join(created.id, *players)
    await asyncio.sleep(1)
    assert await arena.games(created.id) == []
    first = await arena.wait_running(created.id, 2)
    assert len(first) == 2 and min(g["requested_at"] for g in first) >= starts
    await arena.finish(first[0], "1-0")
    await arena.finish(first[1], "0-1")
    second = await eventually(lambda: arena.games(created.id), until=lambda g: len(g) == 4)
    assert len(second) == 4
    consumer = AIOKafkaConsumer(events.ARENA_FINISHED.name, bootstrap_servers=arena.settings.kafka_bootstrap_servers,
                                auto_offset_reset="earliest", group_id=f"test-{t}")
    await consumer.start()
    try:
        # The 10 minutes end with two games running: nobody is paired any more.
        ends = created.ends_at.ToDatetime().replace(tzinfo=starts.tzinfo)
        await asyncio.sleep(max(0.0, arena.clock.real_seconds((ends - arena.clock.now()).total_seconds())) + 0.5)
        running = await arena.games(created.id, running=True)
        assert len(running) == 2
        got = await arena.stub.GetArena(ap.GetArenaRequest(arena_id=created.id))
        assert got.state == ap.ARENA_STATE_RUNNING
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await arena.join(created.id, f"late{t}")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "AR-1" in refused.value.details()
        for g in running:
            await arena.finish(g, "1/2-1/2")
        await eventually(lambda: arena.scored(created.id), until=lambda n: n == 4)
        assert len(await arena.games(created.id)) == 4
        finished = await arena_finished(consumer, created.id)
        assert [(r.player_id, r.points) for r in finished.standings] == \
            [(p, pts) for _, p, pts, *_ in await arena.pure_board(created.id)]
        assert finished.total_players == 4
        got = await arena.stub.GetArena(ap.GetArenaRequest(arena_id=created.id))
        assert got.state == ap.ARENA_STATE_FINISHED
        # Its owner stops reporting it; reading its final table must not bring a series back.
        series = f'arena="{created.id}"'
        await eventually(lambda: scrape_metrics(arena), until=lambda text: series not in text)
        table = await arena.stub.GetLeaderboard(ap.GetLeaderboardRequest(arena_id=created.id))
        assert table.total_players == 4
        assert series not in await scrape_metrics(arena)
        # the creator may open another one now.
        again = await arena.create(creator)
        assert again.state == ap.ARENA_STATE_RUNNING
    finally:
        await consumer.stop()
