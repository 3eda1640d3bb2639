"""Watch servers (WATCH_ONLY): processes that serve a service's Watch streams, off the calls' event loop.

A watch server of the pairing service and one of the arena service, started beside them: each
streams the changes its service commits (with the state read at the time), refuses every other
call with FAILED_PRECONDITION and changes nothing, opens no connection to the broker and holds the
streams that the service itself would otherwise hold.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import grpc
import psutil
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import tournament_pb2 as tp
from arbiter.kit.health import READINESS
from arbiter_tools.devstack.stack import SystemStack
from tests.integration.watchers.watch_support import arena_settings, metric, player, registered, tournament_settings


def streams_open(metrics_url: str) -> float:
    return metric(metrics_url, "arbiter_grpc_streams_open")


def kafka_connections(pid: int, bootstrap: str) -> list[str]:
    """The TCP connections of process `pid` to the broker's port."""
    port = urlsplit(f"//{bootstrap.split(',')[0]}").port
    return [f"{c.raddr.ip}:{c.raddr.port}" for c in psutil.Process(pid).net_connections(kind="tcp")
            if c.raddr and c.raddr.port == port]


@pytest.fixture
def watched_stack(start_system) -> SystemStack:
    stack = start_system(("pairing", "arena"), extra_env={"RATING_TIMEOUT_SECONDS": "0.1"})
    for name in ("pairing", "arena"):
        stack.start_watch_server(name)
    stack.wait_serving(timeout=60, names=("pairing", "arena"))
    return stack


async def test_a_watch_server_streams_what_its_service_commits_and_refuses_every_other_call(
    watched_stack: SystemStack,
) -> None:
    pairing, arena = watched_stack.services["pairing"], watched_stack.services["arena"]
    pairing_watch, arena_watch = watched_stack.watch_servers["pairing"], watched_stack.watch_servers["arena"]
    async with grpc.aio.insecure_channel(pairing.grpc_address) as pairing_channel, \
            grpc.aio.insecure_channel(pairing_watch.grpc_address) as pairing_watch_channel, \
            grpc.aio.insecure_channel(arena.grpc_address) as arena_channel, \
            grpc.aio.insecure_channel(arena_watch.grpc_address) as arena_watch_channel:
        tournaments = tournament_pb2_grpc.TournamentServiceStub(pairing_channel)
        tournaments_watched = tournament_pb2_grpc.TournamentServiceStub(pairing_watch_channel)
        arenas = arena_pb2_grpc.ArenaServiceStub(arena_channel)
        arenas_watched = arena_pb2_grpc.ArenaServiceStub(arena_watch_channel)
        for channel in (pairing_watch_channel, arena_watch_channel):
            answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=READINESS))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING

        tournament = (await tournaments.CreateTournament(tp.CreateTournamentRequest(
            actor=registered(player("creator")), settings=tournament_settings()))).tournament
        created_arena = await arenas.CreateArena(ap.CreateArenaRequest(
            actor=registered(player("creator")), settings=arena_settings()))
        tournament_stream = tournaments_watched.WatchTournament(tp.WatchTournamentRequest(tournament_id=tournament.id))
        arena_stream = arenas_watched.WatchArena(ap.WatchArenaRequest(arena_id=created_arena.id))
        snapshot = await asyncio.wait_for(tournament_stream.read(), 30)
        assert (snapshot.change, snapshot.tournament.id, snapshot.tournament.entrants) == ("snapshot", tournament.id, 0)
        arena_snapshot = await asyncio.wait_for(arena_stream.read(), 30)
        assert (arena_snapshot.change, arena_snapshot.arena.id) == ("snapshot", created_arena.id)
        # The streams are the watch servers', not the services'.
        assert streams_open(pairing_watch.metrics_url) == streams_open(arena_watch.metrics_url) == 1
        assert streams_open(pairing.metrics_url) == streams_open(arena.metrics_url) == 0

        entrant = registered(player("entrant"))
        await tournaments.JoinTournament(tp.JoinTournamentRequest(actor=entrant, tournament_id=tournament.id))
        joined = await asyncio.wait_for(tournament_stream.read(), 30)
        assert (joined.change, joined.tournament.entrants) == ("joined", 1)
        joining = registered(player("player"))
        await arenas.JoinArena(ap.JoinArenaRequest(actor=joining, arena_id=created_arena.id))
        arena_joined = await asyncio.wait_for(arena_stream.read(), 30)
        assert (arena_joined.change, arena_joined.player_id) == ("joined", joining.player_id)
        assert [row.player_id for row in arena_joined.top] == [joining.player_id]

        # Every other call is refused, and changes nothing.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await tournaments_watched.JoinTournament(tp.JoinTournamentRequest(
                actor=registered(player("entrant")), tournament_id=tournament.id))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "watch server" in (refused.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await arenas_watched.GetArena(ap.GetArenaRequest(arena_id=created_arena.id))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        got = await tournaments.GetTournament(tp.GetTournamentRequest(tournament_id=tournament.id))
        assert got.entrants == 1
        tournament_stream.cancel()
        arena_stream.cancel()

    # No consumer, no producer: a watch server never speaks to the broker.
    bootstrap = watched_stack.kafka_bootstrap
    for server in (pairing_watch, arena_watch):
        assert server.process is not None
        assert kafka_connections(server.process.pid, bootstrap) == []
    assert kafka_connections(pairing.process.pid, bootstrap)
