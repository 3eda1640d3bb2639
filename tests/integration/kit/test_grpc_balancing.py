"""One channel to every replica (`ipv4:A,B`): calls spread round robin, and a replica that goes away is failed over.

The kit's channel (arbiter.kit.grpcclient.open_channel) is what every service and tool dials its
peers with; `arbiter up --replicas` hands each caller one such target per service.
"""

from __future__ import annotations

from collections import Counter

import grpc

from arbiter.kit.grpcclient import open_channel
from arbiter_tools.devstack.processes import free_port
from arbiter_tools.devstack.replicas import grpc_target

_METHOD = "/probe.Probe/Who"


async def _replica(name: str) -> tuple[grpc.aio.Server, str]:
    """A gRPC server answering every call with its own name."""

    async def who(_request: bytes, _context: grpc.aio.ServicerContext) -> bytes:
        return name.encode()

    server = grpc.aio.server()
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "probe.Probe", {"Who": grpc.unary_unary_rpc_method_handler(who)})])
    address = f"127.0.0.1:{free_port()}"
    server.add_insecure_port(address)
    await server.start()
    return server, address


async def test_calls_spread_over_every_replica_and_go_on_when_one_is_gone() -> None:
    (first, first_address), (second, second_address) = await _replica("r1"), await _replica("r2")
    channel = open_channel(grpc_target([first_address, second_address]))
    try:
        who = channel.unary_unary(_METHOD)
        await channel.channel_ready()
        answered = Counter([(await who(b"", timeout=10)).decode() for _ in range(40)])
        assert set(answered) == {"r1", "r2"}, answered
        assert min(answered.values()) >= 10, answered  # round robin, not the first address that answers

        await first.stop(grace=None)
        after = Counter([(await who(b"", timeout=10)).decode() for _ in range(20)])
        assert after == Counter({"r2": 20}), after
    finally:
        await channel.close()
        await first.stop(grace=None)
        await second.stop(grace=None)
