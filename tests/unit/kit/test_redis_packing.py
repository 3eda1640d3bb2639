"""The services' Redis connections pack every command into the bytes redis-py's own packing sends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import DataError

from arbiter.kit.redisclient import HiredisPacking, connect_redis

# What the services pass: command names (some with a subcommand), keys and values as text or
# bytes, whole numbers of any size, and floats including the infinities.
_COMMANDS = st.sampled_from(["EVALSHA", "SET", "CLIENT SETNAME", "XADD", b"EVAL", b"CONFIG GET"])
_ARGUMENTS = st.lists(st.one_of(
    st.text(), st.binary(), st.integers(), st.floats(allow_nan=False),
), max_size=40)


def _packed_by(connection: Connection, *args: object) -> bytes:
    return b"".join(bytes(part) for part in connection.pack_command(*args))


def _connections() -> tuple[Connection, Connection]:
    return connect_redis("redis://127.0.0.1:1").connection_pool.connection_class(), Connection()


@given(_COMMANDS, _ARGUMENTS)
def test_hiredis_packs_the_bytes_redis_py_packs(command: str | bytes, arguments: list[object]) -> None:
    ours, theirs = _connections()
    assert isinstance(ours, HiredisPacking)
    assert _packed_by(ours, command, *arguments) == _packed_by(theirs, command, *arguments)
    # One buffer, however many arguments: one write to the socket.
    assert len(ours.pack_command(command, *arguments)) == 1


def test_a_memoryview_is_packed_and_a_bool_refused_as_redis_py_does() -> None:
    ours, theirs = _connections()
    value = memoryview(b"board state")
    assert _packed_by(ours, "SET", "k", value) == _packed_by(theirs, "SET", "k", value)
    for connection in (ours, theirs):
        with pytest.raises(DataError, match="Invalid input of type: 'bool'"):
            connection.pack_command("SET", "k", True)


@pytest.mark.parametrize(("url", "kind"), [
    ("redis://127.0.0.1:6379/0", Connection),
    ("rediss://127.0.0.1:6380/0", SSLConnection),
    ("unix:///tmp/redis.sock?db=2", UnixDomainSocketConnection),
])
def test_the_url_chooses_the_transport_and_its_settings(url: str, kind: type) -> None:
    pool = connect_redis(url, decode_responses=True).connection_pool
    assert issubclass(pool.connection_class, kind) and issubclass(pool.connection_class, HiredisPacking)
    # Settings in the URL win over the caller's, as redis-py's from_url has them.
    assert pool.connection_kwargs["db"] == (2 if url.startswith("unix") else 0)
    assert pool.connection_kwargs["decode_responses"] is True
