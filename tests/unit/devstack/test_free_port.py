"""Ports for the embedded stack's servers: free now, and out of the range outgoing connections take theirs from."""

from __future__ import annotations

import os
import random
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from arbiter_tools.devstack.processes import ephemeral_ports, free_port


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


def test_a_port_someone_holds_is_passed_over(tmp_path: Path) -> None:
    first = free_port(rng=random.Random(7), reservations=tmp_path / "first")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", first))
        holder.listen()
        # The same random sequence proposes the held port first, then moves on (no reservation
        # of it in this caller's directory: the probe alone passes it over).
        assert free_port(rng=random.Random(7), reservations=tmp_path / "second") != first


def test_a_port_just_handed_out_is_not_handed_out_again(tmp_path: Path) -> None:
    # Two callers drawing the same random sequence, as two test workers may: the second moves on.
    first = free_port(rng=random.Random(11), reservations=tmp_path)
    second = free_port(rng=random.Random(11), reservations=tmp_path)
    assert first != second
    assert sorted(int(marker.name) for marker in tmp_path.iterdir()) == sorted([first, second])


def test_a_reservation_expires(tmp_path: Path) -> None:
    first = free_port(rng=random.Random(13), reservations=tmp_path)
    old = time.time() - 3_600
    os.utime(tmp_path / str(first), (old, old))
    assert free_port(rng=random.Random(13), reservations=tmp_path) == first



def test_a_stale_reservation_another_caller_reclaims_first_is_made_anew(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Another caller reclaims the stale marker just before this one reads its age, every time:
    # the port is reserved by a marker made anew, never taken as reserved without one.
    first = free_port(rng=random.Random(17), reservations=tmp_path)
    old = time.time() - 3_600
    os.utime(tmp_path / str(first), (old, old))
    real_stat = Path.stat

    def reclaimed_first(path: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        if path.parent == tmp_path:
            path.unlink(missing_ok=True)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", reclaimed_first)
    assert free_port(rng=random.Random(17), reservations=tmp_path) == first
    monkeypatch.undo()
    assert (tmp_path / str(first)).is_file()
