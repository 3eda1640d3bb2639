"""Who sat in the games a tournament closes (T-15, R-3): the pairing service's ClockService client over real gRPC."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from arbiter.contracts import clock_pb2_grpc
from services.pairing.clients import ClockClient, Unavailable
from tests.support.playsite import ClockStandIn


async def test_who_sat_answers_every_game_and_nobody_for_a_game_the_clock_never_heard_of() -> None:
    stand_in = ClockStandIn()
    stand_in.moves.update({"both": (3, 2), "white": (1, 0)})
    server = grpc.aio.server(migration_thread_pool=ThreadPoolExecutor(2))
    clock_pb2_grpc.add_ClockServiceServicer_to_server(stand_in, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = ClockClient(channel, 5.0)
            assert await client.who_sat(["both", "white", "unheard"]) == {
                "both": (True, True), "white": (True, False), "unheard": (False, False)}
            assert await client.who_sat([]) == {}
    finally:
        await server.stop(0)


async def test_who_sat_without_a_clock_service_is_unavailable_so_the_close_waits() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(Unavailable, match="could not say who sat"):
            await ClockClient(channel, 2.0).who_sat([f"g{i}" for i in range(40)])
