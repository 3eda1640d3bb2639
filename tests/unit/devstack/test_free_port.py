"""Ports for the embedded stack's servers: free now, and out of the range outgoing connections take theirs from."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from arbiter.devstack.processes import ephemeral_ports, free_port


def test_the_ephemeral_range_is_read_from_the_kernel_file_or_is_linux_default(tmp_path: Path) -> None:
    given = tmp_path / "ip_local_port_range"
    given.write_text("40000\t50000\n")
    assert ephemeral_ports(str(given)) == (40_000, 50_000)
    assert ephemeral_ports(str(tmp_path / "missing")) == (32_768, 60_999)
    given.write_text("garbage\n")
    assert ephemeral_ports(str(given)) == (32_768, 60_999)


def test_a_free_port_lies_below_the_ephemeral_range_and_a_server_can_listen_on_it() -> None:
    low, _high = ephemeral_ports()
    for _ in range(20):
        port = free_port()
        if low - 20_000 >= 1_000:
            assert 20_000 <= port < low
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("127.0.0.1", port))
            server.listen()


def test_a_port_someone_holds_is_passed_over() -> None:
    first = free_port(rng=random.Random(7))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", first))
        holder.listen()
        # The same random sequence proposes the held port first, then moves on.
        assert free_port(rng=random.Random(7)) != first
