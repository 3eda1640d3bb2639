"""A whole arena played by dozens of simulated players at a high time scale, with two arena replicas.

Poison records wait on the topics it reads. Mid-arena the replica that pairs the arena is
SIGKILLed (the other takes over) and later Redis is flushed (everything is rebuilt from
PostgreSQL). At the end: no player was ever in two games at once, no pair met inside its
cooldown (AR-3), every game requested was played and scored, and the leaderboard and
ArenaFinished equal the pure scoring recomputed from the recorded games (AR-4 streaks and AR-5
boosts included).
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import grpc
import redis.asyncio as aioredis

from arbiter.competition.arena import ArenaGame, recompute_leaderboard
from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc
from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import GameResult
from arbiter_tools.chaos import read_topic
from arbiter_tools.devstack.processes import ManagedProcess, free_port
from arbiter_tools.poison import publish_poison
from tests.e2e.arena.arena_playsite import ArenaPlaySite, PlayedGame
from tests.support.polling import eventually

TIME_SCALE = 120.0
PLAYERS = 30
MINUTES = 30
FAST_REJOIN = {"KAFKA_SESSION_TIMEOUT_MS": "2000", "KAFKA_HEARTBEAT_INTERVAL_MS": "300"}


def actor(player: str) -> cm.Actor:
    return cm.Actor(player_id=player, kind=cm.ACCOUNT_KIND_REGISTERED)


def check_no_overlap_and_cooldowns(games: list[PlayedGame]) -> None:
    """Nobody in two games at once; AR-3: the k+1-th meeting at least 5*k minutes after the k-th ended."""
    by_player: dict[str, list[PlayedGame]] = defaultdict(list)
    by_pair: dict[frozenset[str], list[PlayedGame]] = defaultdict(list)
    for game in sorted(games, key=lambda g: (g.requested_at, g.game_id)):
        for player in (game.white, game.black):
            previous = by_player[player]
            if previous:
                last = previous[-1]
                assert last.finished_at is not None and game.requested_at >= last.finished_at, (
                    f"{player} in {last.game_id} and {game.game_id} at once")
            previous.append(game)
        pair = frozenset((game.white, game.black))
        met = by_pair[pair]
        if met:
            allowed = max(g.finished_at for g in met if g.finished_at) + timedelta(minutes=5 * len(met))
            assert game.requested_at >= allowed, f"{sorted(pair)} met again in {game.game_id} inside AR-3's cooldown"
        met.append(game)


def pure_board(games: list[PlayedGame], players: list[str]) -> list[tuple[int, str, int, int, int, int]]:
    """The leaderboard recomputed from what the play site recorded, in finish order."""
    done = sorted((g for g in games if g.finished_at), key=lambda g: (g.finished_at, g.game_id))
    rows = recompute_leaderboard(
        [ArenaGame(g.white, g.black, GameResult.from_pdn(g.result), g.white_boosted, g.black_boosted) for g in done],
        players,
    )
    return [(r.rank, r.player_id, r.points, r.wins, r.games, r.streak) for r in rows]


async def service_board(
    stub: arena_pb2_grpc.ArenaServiceStub, arena_id: str
) -> list[tuple[int, str, int, int, int, int]]:
    rows: list[ap.LeaderboardRow] = []
    token = ""
    while True:
        reply = await stub.GetLeaderboard(ap.GetLeaderboardRequest(
            arena_id=arena_id, page=cm.PageRequest(page_size=13, page_token=token)))
        rows.extend(reply.rows)
        if not (token := reply.next_page_token):
            return sorted(((r.rank, r.player_id, r.points, r.wins, r.games, r.streak) for r in rows),
                          key=lambda row: (row[0], row[1]))


async def test_an_arena_survives_a_killed_owner_and_a_redis_flush_and_scores_like_the_rules(start_system) -> None:
    # start_system runs its own event loop (database creation): in a thread, beside this test's loop.
    stack = await asyncio.to_thread(lambda: start_system(("rating", "arena"), time_scale=TIME_SCALE,
                                                         extra_env={**FAST_REJOIN, "REPLICA_ID": "r1"}))
    # The second replica: same environment, its own ports and name.
    env = {**stack.service_env("arena"), "GRPC_PORT": str(free_port()), "METRICS_PORT": str(free_port()),
           "REPLICA_ID": "r2"}
    second = ManagedProcess("arena-2", [sys.executable, "-m", "services.arena.main"],
                            stack.log_dir / "arena-2.log", env=env).start()
    replicas = {"r1": stack.services["arena"].grpc_address, "r2": f"127.0.0.1:{env['GRPC_PORT']}"}
    clock = TimeSource(TIME_SCALE, datetime.fromisoformat(stack.time_origin))
    redis = aioredis.from_url(stack.redis_url)
    channels = {name: grpc.aio.insecure_channel(address) for name, address in replicas.items()}
    for channel in channels.values():
        await asyncio.wait_for(channel.channel_ready(), 60)
    stubs = {name: arena_pb2_grpc.ArenaServiceStub(channel) for name, channel in channels.items()}
    stop = asyncio.Event()
    # Poison records already on the consumed topics the arena and its play site read, as the whole
    # suite's poison tests leave them: the arena sets them aside, the play site skips them.
    for topic in (events.GAME_REQUESTED, events.GAME_FINISHED):
        await publish_poison(stack.kafka_bootstrap, topic)
    try:
        tag = uuid.uuid4().hex[:5]
        players = [f"e2e{tag}-{i:02d}" for i in range(PLAYERS)]
        arena = await stubs["r1"].CreateArena(
            ap.CreateArenaRequest(
                actor=actor(f"creator{tag}"),
                settings=ap.ArenaSettings(
                    name="e2e arena",
                    variant="international",
                    duration_minutes=MINUTES,
                    time_control=cm.FischerControl(base_seconds=120, increment_seconds=1),
                ),
            )
        )
        site = ArenaPlaySite(stack.kafka_bootstrap, arena.id, clock, list(replicas.values()))
        site_task = asyncio.create_task(site.run(stop))
        for i, player in enumerate(players):
            await stubs["r1" if i % 2 else "r2"].JoinArena(ap.JoinArenaRequest(actor=actor(player), arena_id=arena.id))
        ends_at = arena.ends_at.ToDatetime(tzinfo=UTC)

        async def real_until(fraction: float) -> None:
            starts_at = arena.starts_at.ToDatetime(tzinfo=UTC)
            await clock.sleep_until(starts_at + (ends_at - starts_at) * fraction)

        # 1. SIGKILL the replica that pairs the arena; the other takes over (how soon is printed below).
        await real_until(0.3)
        owner = (await redis.get(f"arena:{{{arena.id}}}:owner")).decode()
        survivor = "r2" if owner == "r1" else "r1"
        if owner == "r1":
            stack.kill_service("arena")
        else:
            second.kill()
        killed_at = clock.now()
        killed_real = time.monotonic()
        games_before_kill = len(site.games)

        async def holder() -> str | None:
            held = await redis.get(f"arena:{{{arena.id}}}:owner")
            return held.decode() if held is not None else None

        await eventually(holder, f"{survivor} taking over from {owner}", until=lambda held: held == survivor)
        taken = time.monotonic() - killed_real

        # 2. Redis loses everything; the next reader rebuilds it from PostgreSQL.
        await real_until(0.65)
        await redis.flushall()
        flushed_at = clock.now()
        await service_board(stubs[survivor], arena.id)

        # 3. The end: no new pairing, running games finish and count, then ArenaFinished.
        await real_until(1.0)
        await site.drain(timeout=clock.real_seconds(site.game_seconds[1]) + 5)
        if site_task.done():
            site_task.result()  # a play site that stopped early leaves games unfinished: say why
        assert site.undecodable >= 1, "the poison planted on game.requested was read past"

        async def arena_state() -> int:
            return (await stubs[survivor].GetArena(ap.GetArenaRequest(arena_id=arena.id))).state

        # The arena closes once its last games are scored; the deadline only bounds the wait. Its own
        # state first (what the service decided), then its event on the topic, read from the beginning
        # without a consumer group (a group's join waits on the broker's coordinator).
        await eventually(arena_state, "the arena finished", timeout=120,
                         until=lambda state: state == ap.ARENA_STATE_FINISHED)

        async def arena_finished() -> ev.ArenaFinished | None:
            found = [event for event in await read_topic(stack.kafka_bootstrap, events.ARENA_FINISHED)
                     if event.arena_id == arena.id]
            return found[-1] if found else None

        finished = await eventually(arena_finished, "ArenaFinished on its topic", timeout=60)
        games = list(site.games.values())
        # How many games fit in the arena's 15 real seconds depends on the host's speed (the suite's
        # other worker shares the two cores); every player playing after the kill and after the
        # flush is checked below.
        assert len(games) > PLAYERS, f"only {len(games)} games were played"
        assert all(g.finished_at is not None for g in games), "a requested game was never played"
        assert all(g.requested_at < ends_at for g in games), "a game was requested after the end (AR-1)"
        assert len(games) > games_before_kill + PLAYERS // 2, "pairing did not go on after the owner was killed"
        after_kill = {p for g in games if g.requested_at > killed_at + timedelta(seconds=taken * TIME_SCALE)
                      for p in (g.white, g.black)}
        assert after_kill == set(players), f"stuck after the kill: {sorted(set(players) - after_kill)}"
        after_flush = {p for g in games if g.requested_at > flushed_at for p in (g.white, g.black)}
        assert after_flush == set(players), f"stuck after the flush: {sorted(set(players) - after_flush)}"
        assert any(g.white_boosted or g.black_boosted for g in games)
        check_no_overlap_and_cooldowns(games)
        expected = pure_board(games, players)
        assert await service_board(stubs[survivor], arena.id) == expected
        assert [(r.rank, r.player_id, r.points, r.wins, r.games) for r in finished.standings] == \
            [row[:5] for row in expected]
        got = await stubs[survivor].GetArena(ap.GetArenaRequest(arena_id=arena.id))
        assert got.state == ap.ARENA_STATE_FINISHED and got.games_played == len(games)
        boosts = sum(g.white_boosted + g.black_boosted for g in games)
        print(f"\n{len(games)} games, {boosts} boosts, owner {owner} killed, {survivor} took over in {taken:.2f} s,"
              f" {site.requests_seen} GameRequested records read, boost refusals: {len(site.boost_refusals)}")
        print("logs:", stack.log_dir)
    finally:
        stop.set()
        await asyncio.gather(site_task, return_exceptions=True)
        for channel in channels.values():
            await channel.close()
        await redis.aclose()
        second.stop()
