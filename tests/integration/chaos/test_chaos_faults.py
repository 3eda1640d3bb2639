"""The chaos suite's own faults do what they say, on the real servers: a PostgreSQL cluster restarted for
real, a Redis killed that comes back empty, a crowd of watchers that rides out a killed service."""

from __future__ import annotations

import asyncio
import signal
import tempfile
import uuid
from pathlib import Path

import asyncpg
import grpc
import psutil
import pytest
import redis

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc
from arbiter.contracts import common_pb2 as common
from arbiter_tools.chaos import FaultCounts, PrivatePostgres, Watched, WatcherCrowd, kill_redis, restart_postgres
from arbiter_tools.devstack.infra import start_redis
from arbiter_tools.devstack.processes import free_port
from tests.support.polling import eventually_blocking


def test_a_private_cluster_is_stopped_as_by_a_crash_and_keeps_what_was_committed() -> None:
    # Not under tmp_path: pytest makes that root's alone, and the cluster runs as `postgres`.
    cluster = PrivatePostgres(Path(tempfile.mkdtemp(prefix="arbiter-chaos-pg-test-")))
    counts = FaultCounts()

    async def scenario() -> None:
        before = await asyncpg.connect(cluster.url)
        await before.execute("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)")
        await asyncio.to_thread(restart_postgres, cluster, 0.5, "immediate", counts)
        with pytest.raises((asyncpg.PostgresError, OSError, asyncpg.InterfaceError)):
            await before.fetchval("SELECT n FROM kept")  # its server process went with the crash
        after = await asyncpg.connect(cluster.url)
        try:
            assert await after.fetchval("SELECT n FROM kept") == 7
        finally:
            await after.close()

    try:
        cluster.init()
        asyncio.run(scenario())
    finally:
        cluster.close()
    assert counts.postgres_restarts == 1 and counts.by_kind()["postgres_restarts"] == 1
    assert not cluster.directory.exists()


def test_a_durable_cluster_runs_with_the_settings_it_was_given() -> None:
    cluster = PrivatePostgres(Path(tempfile.mkdtemp(prefix="arbiter-chaos-pg-test-")), durable=True,
                              settings={"work_mem": "8MB"})

    async def settings() -> tuple[str, str]:
        connection = await asyncpg.connect(cluster.url)
        try:
            return await connection.fetchval("SHOW fsync"), await connection.fetchval("SHOW work_mem")
        finally:
            await connection.close()

    try:
        cluster.init()
        assert asyncio.run(settings()) == ("on", "8MB")
        assert psutil.Process(cluster.pid).name().startswith("postgres")  # the postmaster a bench measures
    finally:
        cluster.close()


def test_a_killed_redis_comes_back_empty_on_its_port(tmp_path: Path) -> None:
    port = free_port()
    server = start_redis(port, tmp_path / "redis" / "redis.log")
    counts = FaultCounts()
    try:
        client = redis.Redis(port=port)
        client.set("chaos-key", "held")
        kill_redis(server, port, 0.2, counts)
        assert redis.Redis(port=port).get("chaos-key") is None
        assert counts.redis_kills == 1
    finally:
        server.stop(signal.SIGTERM)


def test_a_crowd_of_watchers_asks_again_after_its_service_is_killed(start_system) -> None:
    stack = start_system(("arena",), extra_env={"RATING_TIMEOUT_SECONDS": "0.1"})
    address = stack.services["arena"].grpc_address

    async def create() -> str:
        async with grpc.aio.insecure_channel(address) as channel:
            arena = await arena_pb2_grpc.ArenaServiceStub(channel).CreateArena(ap.CreateArenaRequest(
                actor=common.Actor(player_id=f"chaos-{uuid.uuid4().hex[:8]}", kind=common.ACCOUNT_KIND_REGISTERED),
                settings=ap.ArenaSettings(name="Watched", variant="international", duration_minutes=60,
                                          time_control=common.FischerControl(base_seconds=180, increment_seconds=2))))
            return arena.id

    crowd = WatcherCrowd([Watched("arena", address, asyncio.run(create()))], size=40, reading=0.5, seed=3).start()
    try:
        eventually_blocking(lambda: crowd.counts.watch_streams_served == 40, "every watcher served its snapshot")
        stack.kill_service("arena")
        eventually_blocking(lambda: crowd.counts.watch_broken == 40, "every stream, read or not, broken by the kill")
        stack.start_service("arena")
        stack.wait_serving(timeout=60, names=["arena"])
        eventually_blocking(lambda: crowd.counts.watch_streams_served == 80, "every watcher served again")
    finally:
        counts = crowd.stop(FaultCounts())
    assert counts.watchers == 40 and counts.watcher_crowds == 1 and counts.watch_refused == 0
