"""Redis lost for real in the middle of a tournament and an arena: everything finishes, on time.

The five services and the play-site simulator run on a Redis of the test's own. While round games
and arena games are in flight, among them games of players who never move (only the clock's flag
ends those, T-16), Redis is killed (SIGKILL) and a new, empty one is started on the same port.
The tournament finishes; the arena, whose end passes after the loss, finishes as soon as its last
game has ended (AR-1) and its creator may open another competition (A-2); the games in flight at
the loss are ended by their flags; the clock service rebuilt its Redis once, and the pairing
service its busy registry (T-18).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import datetime, timedelta

import asyncpg
import grpc
import pytest

from arbiter.contracts import arena_pb2, arena_pb2_grpc, tournament_pb2, tournament_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import timestamp
from arbiter.kit.timesource import TimeSource
from arbiter_tools.devstack.stack import SystemStack
from arbiter_tools.simulator.behaviour import Behaviour, Profiles
from arbiter_tools.simulator.bench.readings import scrape
from arbiter_tools.simulator.playsite.base import LiveGame, PlaySiteConfig
from arbiter_tools.simulator.playsite.router import PlaySite
from tests.e2e.system_support import serving
from tests.support.polling import eventually

pytestmark = pytest.mark.timeout(300)

TIME_SCALE = 60.0
# Competition seconds: an arena ends this long after it was opened (AR-1's shortest).
ARENA_MINUTES = 10
# The arena finishes this long (competition time) after its last game ended at the latest: the
# result's way through the broker and the consumer, at the time scale.
FINISH_SLACK = timedelta(minutes=2)


def registered(player: str) -> common.Actor:
    return common.Actor(player_id=player, kind=common.ACCOUNT_KIND_REGISTERED)


@pytest.fixture
def system(infra_env, killable_redis, tmp_path):  # type: ignore[no-untyped-def]
    """The five services on the session's broker and PostgreSQL and on the test's own Redis."""
    with serving(SystemStack(tmp_path / "system", time_scale=TIME_SCALE, free_ports=True,
                             environ={**os.environ, **infra_env, "REDIS_URL": killable_redis.url},
                             say=lambda _line: None,
                             extra_env={"KAFKA_SESSION_TIMEOUT_MS": "2000", "KAFKA_HEARTBEAT_INTERVAL_MS": "300"},
                             )) as stack:
        yield stack


def test_a_tournament_and_an_arena_finish_on_time_across_a_redis_killed_and_restarted_empty(
        system, killable_redis, infra_env) -> None:  # type: ignore[no-untyped-def]
    asyncio.run(_play(system, killable_redis, infra_env["DATABASE_URL"]))


async def _play(stack: SystemStack, redis, database_url: str) -> None:  # type: ignore[no-untyped-def]
    time_source = TimeSource(stack.time_scale, datetime.fromisoformat(stack.time_origin))
    prefix = f"loss{uuid.uuid4().hex[:6]}-"
    entrants = [f"{prefix}t{n}" for n in range(4)]
    players = [f"{prefix}a{n}" for n in range(6)]
    never_show = {entrants[3], players[4], players[5]}
    profiles = Profiles(seed=11, assigned={p: Behaviour.NEVER_SHOWS if p in never_show else Behaviour.NORMAL
                                           for p in (*entrants, *players)})
    profiles.mix = {Behaviour.NORMAL: 1.0}
    playsite = PlaySite(stack.kafka_bootstrap, time_source, profiles, PlaySiteConfig(
        seed=11, think_seconds=(1.0, 3.0), group_id=f"playsite-{prefix}", player_prefix=prefix,
        arena_grpc_addr=stack.services["arena"].grpc_address, clock_grpc_addr=stack.services["clock"].grpc_address))
    results: list[ev.GameFinished] = []
    playsite.on_finished.append(results.append)
    await playsite.start()
    try:
        async with _channels(stack) as (tournaments, arenas):
            created = await tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(
                actor=registered(entrants[0]), settings=tournament_pb2.TournamentSettings(
                    name="redis loss round robin", variant="international",
                    time_control=common.TimeControl(fischer=common.FischerControl(base_seconds=180,
                                                                                  increment_seconds=2)),
                    capacity=4, starts_at=timestamp(time_source.now() + timedelta(minutes=5, seconds=10)),
                    duration_minutes=480, rated=True)))
            tournament = created.tournament
            for player in entrants:
                await tournaments.JoinTournament(tournament_pb2.JoinTournamentRequest(
                    actor=registered(player), tournament_id=tournament.id))
            arena = await arenas.CreateArena(arena_pb2.CreateArenaRequest(
                actor=registered(players[0]), settings=arena_pb2.ArenaSettings(
                    name="redis loss arena", variant="international", duration_minutes=ARENA_MINUTES, rated=True,
                    time_control=common.FischerControl(base_seconds=180, increment_seconds=2))))
            for player in players:
                await arenas.JoinArena(arena_pb2.JoinArenaRequest(actor=registered(player), arena_id=arena.id))

            # Lose Redis while a never-showing player's arena game and a round game are in flight.
            in_flight = await _wait_for_games(playsite, arena.id, tournament.id, never_show)
            # A start finding Redis without the epoch PostgreSQL names (another system of this session) rebuilt too.
            rebuilds_before = _clock_rebuilds(stack)
            replays_before = _busy_replays(stack)
            redis.restart_empty()

            arena_row = await _wait_finished(database_url, arena.id)
            done = await _wait_tournament(tournaments, tournament.id)
            assert done.state == tournament_pb2.TOURNAMENT_STATE_FINISHED, done

            # the arena's creator is free to open another competition.
            again = await arenas.CreateArena(arena_pb2.CreateArenaRequest(
                actor=registered(players[0]), settings=arena_pb2.ArenaSettings(
                    name="after the loss", variant="international", duration_minutes=ARENA_MINUTES,
                    time_control=common.FischerControl(base_seconds=180, increment_seconds=2))))
            assert again.id != arena.id
    finally:
        await playsite.stop()

    # AR-1: the arena finished as soon as its last game had ended, however late that was.
    last_game = max(arena_row["last_game_at"], arena_row["ends_at"])
    assert arena_row["finished_at"] - last_game <= FINISH_SLACK, dict(arena_row)
    # The games in flight at the loss were ended by the clock's flags (T-16), not left running.
    by_game = {result.game_id: result for result in results}
    for game_id in in_flight:
        assert game_id in by_game, f"{game_id} never finished"
        assert by_game[game_id].termination in (common.TERMINATION_NEVER_SAT, common.TERMINATION_TIME,
                                                 common.TERMINATION_BOTH_ABSENT), by_game[game_id]
    assert playsite.stats.errors == 0
    assert _clock_rebuilds(stack) == rebuilds_before + 1
    assert _busy_replays(stack) > replays_before


def _clock_rebuilds(stack: SystemStack) -> float:
    return scrape(stack.services["clock"].metrics_url).get(
        'arbiter_hot_rebuilds_total{service="clock",what="clocks"}', 0.0)


def _busy_replays(stack: SystemStack) -> float:
    return scrape(stack.services["pairing"].metrics_url).get(
        'arbiter_hot_rebuilds_total{service="pairing",what="busy_registry"}', 0.0)


class _channels:
    """The pairing and arena stubs of a stack (closed after use)."""

    def __init__(self, stack: SystemStack) -> None:
        self.pairing = grpc.aio.insecure_channel(stack.services["pairing"].grpc_address)
        self.arena = grpc.aio.insecure_channel(stack.services["arena"].grpc_address)

    async def __aenter__(self) -> tuple[tournament_pb2_grpc.TournamentServiceStub, arena_pb2_grpc.ArenaServiceStub]:
        return (tournament_pb2_grpc.TournamentServiceStub(self.pairing),
                arena_pb2_grpc.ArenaServiceStub(self.arena))

    async def __aexit__(self, *_exc: object) -> None:
        await self.pairing.close()
        await self.arena.close()


def _hosted(playsite: PlaySite, competition_id: str) -> list[LiveGame]:
    return [live for live in playsite.games.values()
            if live.request.competition.id == competition_id and not live.end.is_set()]


async def _wait_for_games(playsite: PlaySite, arena_id: str, tournament_id: str, never_show: set[str]) -> list[str]:
    """The arena games with a never-showing player in flight, once one is and a round game too."""
    def in_flight() -> list[str]:
        arena_games = [live.request.game_id for live in _hosted(playsite, arena_id)
                       if {live.request.white_id, live.request.black_id} & never_show]
        return arena_games if _hosted(playsite, tournament_id) else []

    return await eventually(in_flight, "an arena game of a never-showing player and a round game in flight together",
                            timeout=90)


async def _wait_finished(database_url: str, arena_id: str) -> asyncpg.Record:
    """The arena's row once it is finished, with the end of its last game."""
    connection = await asyncpg.connect(database_url)
    try:
        return await eventually(lambda: connection.fetchrow(
            "SELECT a.state, a.ends_at, a.finished_at, (SELECT max(g.finished_at) FROM arena.arena_games g"
            " WHERE g.arena_id = a.id) AS last_game_at,"
            " (SELECT count(*) FROM arena.arena_games g WHERE g.arena_id = a.id AND g.result IS NULL) AS running"
            " FROM arena.arenas a WHERE a.id = $1", arena_id), "the arena finished", timeout=150, every=0.2,
            until=lambda row: row["state"] == "finished")
    finally:
        await connection.close()


async def _wait_tournament(stub: tournament_pb2_grpc.TournamentServiceStub,
                           tournament_id: str) -> tournament_pb2.Tournament:
    """The tournament once it is over."""
    over = (tournament_pb2.TOURNAMENT_STATE_FINISHED, tournament_pb2.TOURNAMENT_STATE_CANCELLED)
    request = tournament_pb2.GetTournamentRequest(tournament_id=tournament_id)
    return await eventually(lambda: stub.GetTournament(request), "the tournament over", timeout=150, every=0.2,
                            until=lambda tournament: tournament.state in over)
