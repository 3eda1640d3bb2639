"""Crowds of Watch streams on real service processes take nothing the calls need.

150 watchers of one tournament (pairing) and of one arena (arena), most reading and some never
reading past the snapshot: Create, Join, the leaderboard, the matchmaker's passes and the busy
registry's rebuild still succeed; the process holds one Redis connection for all of them (one
subscriber per channel); the limits per competition and per process refuse more with
RESOURCE_EXHAUSTED and a time to retry; a watch connection lost ends the streams with UNAVAILABLE
and the next watch is served.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import psutil
import pytest
import redis.asyncio as aioredis

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, tournament_pb2_grpc
from arbiter.contracts import tournament_pb2 as tp
from tests.integration.watchers.watch_support import arena_settings, metric, player, registered, tournament_settings
from tests.support.polling import eventually

CROWD = 150
# Of the crowd, these never read past their snapshot.
IDLE = 50
# Streams per client channel.
STREAMS_PER_CHANNEL = 50
RETRY_AFTER = "retry-after-ms"


async def redis_clients_of(redis: aioredis.Redis, pid: int) -> list[dict[str, Any]]:
    """The Redis connections of process `pid` (CLIENT LIST, matched on the process's own TCP addresses)."""
    local = {f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process(pid).net_connections(kind="tcp") if c.laddr}
    return [client for client in await redis.client_list() if client["addr"] in local]


@asynccontextmanager
async def crowd_channels(address: str) -> AsyncIterator[list[grpc.aio.Channel]]:
    """Client connections for the crowd, spread over them as many viewers' would be."""
    channels = [grpc.aio.insecure_channel(address) for _ in range(CROWD // STREAMS_PER_CHANNEL)]
    try:
        yield channels
    finally:
        for channel in channels:
            await channel.close()


async def open_crowd(channels: list[grpc.aio.Channel], open_stream: Callable[[grpc.aio.Channel], Any]) -> list[Any]:
    """CROWD streams spread over the channels, each read up to its snapshot (so served)."""
    streams = [open_stream(channels[n % len(channels)]) for n in range(CROWD)]
    snapshots = await asyncio.gather(*(stream.read() for stream in streams))
    assert {snapshot.change for snapshot in snapshots} == {"snapshot"}
    return streams


async def refused_stream(call: Any) -> grpc.aio.AioRpcError:
    """The error that ends the stream, after whatever it had sent before."""
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        while (await asyncio.wait_for(call.read(), 30)) is not grpc.aio.EOF:
            pass
    return refused.value


@pytest.fixture
async def redis(redis_url: str):
    client = aioredis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def pairing_stack(start_system):
    """The pairing service alone (its collaborators' addresses lead nowhere: nothing here calls them)."""
    return start_system(("pairing",), extra_env={"BUSY_CHECK_SECONDS": "0.2"})


@pytest.fixture
def arena_stack(start_system):
    """The arena service alone (no rating service: it pairs by rank)."""
    return start_system(("arena",), extra_env={"RATING_TIMEOUT_SECONDS": "0.1"})


async def test_a_crowd_watching_a_tournament_leaves_creates_joins_and_the_busy_rebuild_alone(
    pairing_stack, redis: aioredis.Redis,
) -> None:
    service = pairing_stack.services["pairing"]
    async with crowd_channels(service.grpc_address) as channels:
        stub = tournament_pb2_grpc.TournamentServiceStub(channels[0])
        watched = (await stub.CreateTournament(tp.CreateTournamentRequest(
            actor=registered(player("creator")), settings=tournament_settings()))).tournament
        crowd = await open_crowd(channels, lambda channel: tournament_pb2_grpc.TournamentServiceStub(channel)
                                 .WatchTournament(tp.WatchTournamentRequest(tournament_id=watched.id)))
        readers = crowd[IDLE:]
        assert metric(service.metrics_url, "arbiter_grpc_streams_open", method="WatchTournament") == CROWD

        # One connection subscribed for the whole crowd.
        [(_, subscribers)] = await redis.pubsub_numsub(f"pairing:watch:{watched.id}")
        assert subscribers == 1
        clients = await redis_clients_of(redis, service.process.pid)
        [feed] = [client for client in clients if client["name"] == "arbiter-pairing-watch"]
        assert feed["sub"] == "1"
        assert [client for client in clients if client["sub"] != "0" and client is not feed] == []

        # The calls go on as if nobody watched.
        other = await stub.CreateTournament(tp.CreateTournamentRequest(
            actor=registered(player("creator")), settings=tournament_settings()))
        assert other.tournament.id != watched.id
        joined = await asyncio.gather(*(
            stub.JoinTournament(tp.JoinTournamentRequest(actor=registered(player("entrant")), tournament_id=watched.id))
            for _ in range(20)))
        assert sorted(response.entrants for response in joined) == list(range(1, 21))
        # Every reader hears every join, with the tournament as it stood when the change was sent.
        for reader in readers:
            changes = [await reader.read() for _ in range(20)]
            assert {change.change for change in changes} == {"joined"}
            assert max(change.tournament.entrants for change in changes) == 20

        # The busy registry is rebuilt when Redis loses it, crowd or not.
        rebuilt = metric(service.metrics_url, "arbiter_busy_registry_rebuilds_total")
        await redis.delete("pairing:{busy}:whole")

        async def rebuilt_again() -> bool:
            return metric(service.metrics_url, "arbiter_busy_registry_rebuilds_total") > rebuilt

        await eventually(rebuilt_again, "the busy registry rebuilt")
        for stream in crowd:
            stream.cancel()


async def test_a_crowd_watching_an_arena_leaves_the_leaderboard_and_the_matchmaker_alone(
    arena_stack, redis: aioredis.Redis,
) -> None:
    service = arena_stack.services["arena"]
    async with crowd_channels(service.grpc_address) as channels:
        stub = arena_pb2_grpc.ArenaServiceStub(channels[0])
        watched = await stub.CreateArena(ap.CreateArenaRequest(actor=registered(player("creator")),
                                                               settings=arena_settings()))
        crowd = await open_crowd(channels, lambda channel: arena_pb2_grpc.ArenaServiceStub(channel)
                                 .WatchArena(ap.WatchArenaRequest(arena_id=watched.id)))
        readers = crowd[IDLE:]
        [(_, subscribers)] = await redis.pubsub_numsub(f"arena:watch:{watched.id}")
        assert subscribers == 1
        clients = await redis_clients_of(redis, service.process.pid)
        assert len([client for client in clients if client["name"] == "arbiter-arena-watch"]) == 1

        other = await stub.CreateArena(ap.CreateArenaRequest(actor=registered(player("creator")),
                                                             settings=arena_settings()))
        assert other.id != watched.id
        players = [player("waiting") for _ in range(4)]
        for one in players:
            await stub.JoinArena(ap.JoinArenaRequest(actor=registered(one), arena_id=watched.id))
        board = await stub.GetLeaderboard(ap.GetLeaderboardRequest(arena_id=watched.id))
        assert board.total_players == 4
        # The matchmaker pairs the four; every reader hears the joins and the pairing, with the board.
        for reader in readers:
            heard: list[ap.ArenaChange] = []
            while sum(change.change == "paired" for change in heard) == 0 or len(
                    [c for c in heard if c.change == "joined"]) < 4:
                heard.append(await asyncio.wait_for(reader.read(), 30))
            assert {change.player_id for change in heard if change.change == "joined"} == set(players)
            assert heard[-1].arena.id == watched.id and len(heard[-1].top) == 4
        arena = await stub.GetArena(ap.GetArenaRequest(arena_id=watched.id))
        assert arena.players == 4

        # The watch connection lost: every stream ends with UNAVAILABLE, and watching again works.
        [feed] = [client for client in await redis_clients_of(redis, service.process.pid)
                  if client["name"] == "arbiter-arena-watch"]
        await redis.client_kill_filter(_id=feed["id"])
        for reader in readers[:10]:
            error = await refused_stream(reader)
            assert error.code() == grpc.StatusCode.UNAVAILABLE
            assert "lost Redis" in error.details()
        again = stub.WatchArena(ap.WatchArenaRequest(arena_id=watched.id))
        assert (await again.read()).change == "snapshot"
        late = player("late")
        await stub.JoinArena(ap.JoinArenaRequest(actor=registered(late), arena_id=watched.id))
        # The matchmaker may pair the waiting players meanwhile: its changes come on the same stream.
        change = await asyncio.wait_for(again.read(), 30)
        while change.change != "joined":
            assert change.change == "paired", change
            change = await asyncio.wait_for(again.read(), 30)
        assert change.player_id == late
        again.cancel()
        for stream in crowd:
            stream.cancel()


@pytest.fixture
def limited_pairing(start_system):
    """The pairing service serving two streams per tournament and three in all."""
    return start_system(("pairing",), extra_env={"WATCH_MAX_WATCHERS": "2", "WATCH_MAX_STREAMS": "3"})


async def test_streams_beyond_the_limits_are_refused_with_a_time_to_retry(limited_pairing) -> None:
    service = limited_pairing.services["pairing"]
    async with grpc.aio.insecure_channel(service.grpc_address) as channel:
        stub = tournament_pb2_grpc.TournamentServiceStub(channel)
        first, second = [(await stub.CreateTournament(tp.CreateTournamentRequest(
            actor=registered(player("creator")), settings=tournament_settings()))).tournament for _ in range(2)]

        def watch(tournament: tp.Tournament) -> Any:
            return stub.WatchTournament(tp.WatchTournamentRequest(tournament_id=tournament.id))

        open_streams = [watch(first), watch(first)]
        for stream in open_streams:
            assert (await stream.read()).change == "snapshot"
        per_tournament = await refused_stream(watch(first))
        assert per_tournament.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"tournament {first.id} has as many live watches as one replica serves (2); retry in" in \
            per_tournament.details()
        open_streams.append(watch(second))
        assert (await open_streams[-1].read()).change == "snapshot"
        per_process = await refused_stream(watch(second))
        assert per_process.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "this replica serves as many Watch streams as it may (3); retry in" in per_process.details()
        for refused in (per_tournament, per_process):
            wait_ms = int(dict(refused.trailing_metadata() or ())[RETRY_AFTER])
            assert 5_000 <= wait_ms <= 10_000
            assert f"retry in {-(-wait_ms // 1000)} s" in refused.details()
        assert metric(service.metrics_url, "arbiter_watch_refused_total", limit="max_watchers") == 1
        assert metric(service.metrics_url, "arbiter_watch_refused_total", limit="max_streams") == 1
        # A stream that ends makes room.
        open_streams.pop(0).cancel()

        async def room() -> bool:
            return metric(service.metrics_url, "arbiter_grpc_streams_open", method="WatchTournament") == 2

        await eventually(room, "the cancelled stream closed")
        again = watch(first)
        assert (await again.read()).change == "snapshot"
        for stream in (*open_streams, again):
            stream.cancel()
