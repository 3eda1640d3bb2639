"""T-18's busy registry on real Redis: whole batches per script call, a late start never re-adds a player,
and a registry Redis lost is replayed from the real game topics."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from redis.exceptions import RedisError

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.metrics import Metrics
from arbiter.kit.settings import KitSettings
from arbiter_tools.devstack.infra import start_redis
from arbiter_tools.devstack.processes import free_port
from services.pairing.busy import BusyRebuild, BusyRegistry, retry_pause
from services.pairing.metrics import PairingMetrics
from tests.integration.pairing.pairing_support import insert_round_games, private_pairing_schema
from tests.support.polling import eventually


async def test_players_are_busy_between_start_and_finish_of_any_game(redis_url) -> None:
    client = aioredis.from_url(redis_url)
    tag = uuid.uuid4().hex[:6]
    registry = BusyRegistry(client, ttl_seconds=600)
    try:
        games = [(f"{tag}-g{i}", f"{tag}-w{i}", f"{tag}-b{i}") for i in range(1_200)]  # more than one call
        await registry.started(games)
        players = [p for _, white, black in games for p in (white, black)]
        assert await registry.busy(players + [f"{tag}-idle"]) == set(players)
        # One player in two games stays busy until both are over.
        await registry.started([(f"{tag}-extra", f"{tag}-w0", f"{tag}-other")])
        await registry.finished(games[:700])
        assert await registry.busy(players) == {p for _, w, b in games[700:] for p in (w, b)} | {f"{tag}-w0"}
        await registry.finished([(f"{tag}-extra", f"{tag}-w0", f"{tag}-other")])
        assert f"{tag}-w0" not in await registry.busy([f"{tag}-w0"])
        # A GameStarted that arrives after the game's end (another topic, another partition) is ignored.
        await registry.started(games[:3])
        assert await registry.busy([p for _, w, b in games[:3] for p in (w, b)]) == set()
        assert await registry.busy([]) == set()
    finally:
        keys = [key async for key in client.scan_iter(f"pairing:*{tag}*", count=1000)]
        for start in range(0, len(keys), 500):
            await client.delete(*keys[start:start + 500])
        await client.aclose()


# -- rebuilding after Redis lost the registry -------------------------------------------------------

TTL_SECONDS = 3600


class OwnRedis:
    """A redis-server of this module's own, which a test may restart (losing everything, as without persistence)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = start_redis(self.port, folder / "redis.log")

    def restart(self) -> None:
        """Stop the server and start a new one on the same port: a new run_id and no data."""
        self.process.stop(signal.SIGTERM)
        self.process = start_redis(self.port, self.folder / "redis.log")


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnRedis]:
    """The registry's marker and claim are global names: a server of its own keeps them from the session's."""
    server = OwnRedis(tmp_path_factory.mktemp("busy-redis"))
    try:
        yield server
    finally:
        server.process.stop(signal.SIGTERM)


@pytest.fixture
async def rebuild_stage(infra_env: dict[str, str], database_url: str, own_redis: OwnRedis
                        ) -> AsyncIterator[SimpleNamespace]:
    """A registry on its own Redis server and a pairing schema of its own, for BusyRebuild."""
    client = aioredis.from_url(own_redis.url)
    await client.flushall()
    settings = KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=own_redis.url,
        database_url=database_url, grpc_port=0, metrics_port=0, kafka_fetch_max_wait_ms=50,
    )
    metrics = PairingMetrics.create(Metrics("pairing-busy-test"))
    registry = BusyRegistry(client, ttl_seconds=TTL_SECONDS)
    try:
        async with private_pairing_schema(database_url) as pool:
            def rebuild(settings: KitSettings = settings, check_seconds: float = 0.2) -> BusyRebuild:
                return BusyRebuild(registry, pool, settings, metrics.busy_rebuilds, "pairing-busy-test",
                                   check_seconds=check_seconds, lease_seconds=60)

            yield SimpleNamespace(registry=registry, redis=client, server=own_redis, pool=pool, settings=settings,
                                  rebuild=rebuild,
                                  rebuilds=lambda: metrics.busy_rebuilds.labels("pairing-busy-test")._value.get())
    finally:
        await client.aclose()


async def _publish(bootstrap: str, records: list[tuple[str, Any, int]]) -> None:
    """(topic, event, timestamp ms) records onto the session's real topics."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for topic, event, stamp in records:
            await producer.send_and_wait(topic, event.SerializeToString(), key=event.game_id.encode(),
                                         timestamp_ms=stamp)
    finally:
        await producer.stop()


AN_HOUR_AGO_BUT_20_MINUTES = (TTL_SECONDS - 1200) * 1000


async def _site_history(stage: SimpleNamespace) -> tuple[dict[str, tuple[str, str]], int]:
    """Games of every kind in the game topics and pairing's tables: ({name: its two players}, now in ms)."""
    tag = uuid.uuid4().hex[:8]
    seats = {name: (f"{tag}-{name}-w", f"{tag}-{name}-b") for name in
             ("running", "over", "started_after_end", "decided_here", "ours_running", "too_old", "old_running")}
    game = {name: f"t_{tag}-r1-b{i}-g1" if name in ("decided_here", "ours_running") else f"casual-{tag}-{name}"
            for i, name in enumerate(seats, start=1)}
    now = int(time.time() * 1000)
    started = {name: ev.GameStarted(game_id=game[name], white_id=white, black_id=black)
               for name, (white, black) in seats.items()}
    ended = {name: ev.GameFinished(game_id=game[name], white_id=seats[name][0], black_id=seats[name][1],
                                   result=common.GAME_RESULT_DRAW) for name in ("over", "started_after_end")}
    await insert_round_games(stage.pool, tag, [(game["decided_here"], *seats["decided_here"], True),
                                         (game["ours_running"], *seats["ours_running"], False)])
    await _publish(stage.settings.kafka_bootstrap_servers, [
        ("game.started", started["too_old"], now - (TTL_SECONDS + 600) * 1000),
        # Started 40 minutes ago and never finished: busy for the 20 minutes its start still counts.
        ("game.started", started["old_running"], now - AN_HOUR_AGO_BUT_20_MINUTES),
        ("game.started", started["running"], now - 5_000),
        ("game.started", started["over"], now - 5_000),
        ("game.finished", ended["over"], now - 4_000),
        # The end was published before the start (two topics: the play site gives no order between them).
        ("game.finished", ended["started_after_end"], now - 3_000),
        ("game.started", started["started_after_end"], now - 2_000),
        ("game.started", started["decided_here"], now - 2_000),
        ("game.started", started["ours_running"], now - 2_000),
    ])
    return seats, now


async def test_a_lost_registry_is_replayed_from_the_game_topics_and_marked_whole(rebuild_stage) -> None:
    """T-18 after Redis lost its data: games still running make their players busy again, none other does."""
    seats, now = await _site_history(rebuild_stage)
    players = [p for pair in seats.values() for p in pair]
    running = {*seats["running"], *seats["ours_running"], *seats["old_running"]}
    assert not await rebuild_stage.registry.whole()
    assert await rebuild_stage.registry.busy(players) == set()

    assert await rebuild_stage.rebuild().rebuild()
    assert await rebuild_stage.registry.whole()
    assert await rebuild_stage.registry.busy(players) == running
    assert rebuild_stage.rebuilds() == 1
    # Each start counts for the ttl from when it was published, as it did live.
    for name, ago_ms in (("old_running", AN_HOUR_AGO_BUT_20_MINUTES), ("running", 5_000)):
        for player in seats[name]:
            assert await rebuild_stage.redis.expiretime(f"pairing:playing:{player}") == (
                (now - ago_ms) // 1000 + TTL_SECONDS)
    # A replay over a registry that holds it already (a second replica after a lapsed claim) changes
    # nothing, and a live start later than a replayed one keeps its later expiry.
    await rebuild_stage.registry.started([(f"later-{seats['old_running'][0]}", *seats["old_running"])])
    await rebuild_stage.redis.delete("pairing:{busy}:whole")
    assert await rebuild_stage.rebuild().rebuild()
    assert await rebuild_stage.registry.busy(players) == running
    assert await rebuild_stage.redis.ttl(f"pairing:playing:{seats['old_running'][0]}") > TTL_SECONDS - 60


async def test_the_watch_rebuilds_after_redis_restarts_and_after_a_flush(rebuild_stage) -> None:
    seats, _ = await _site_history(rebuild_stage)
    stop = asyncio.Event()
    watch = asyncio.create_task(rebuild_stage.rebuild().run(stop))

    async def until_whole() -> None:
        # OSError, RedisError: the server is restarting.
        await eventually(rebuild_stage.registry.whole, "the registry whole again", timeout=60,
                         tolerate=(OSError, RedisError))

    try:
        await until_whole()
        assert await rebuild_stage.registry.busy(seats["running"]) == set(seats["running"])
        rebuild_stage.server.restart()  # no persistence: a new server, empty
        await until_whole()
        assert await rebuild_stage.registry.busy(seats["running"]) == set(seats["running"])
        await rebuild_stage.redis.flushall()
        await until_whole()
        assert await rebuild_stage.registry.busy(seats["running"]) == set(seats["running"])
        assert rebuild_stage.rebuilds() == 3
        assert not watch.done()  # the restart's connection errors did not end the watch
    finally:
        stop.set()
        await asyncio.wait_for(watch, 30)


async def test_a_marker_left_by_another_server_is_not_trusted(rebuild_stage) -> None:
    """A failover to a server that was behind, or a snapshot restored: the marker names another run_id."""
    await rebuild_stage.redis.set("pairing:{busy}:whole", "a server we used to use")
    assert not await rebuild_stage.registry.whole()
    assert await rebuild_stage.rebuild().rebuild()
    run_id = (await rebuild_stage.redis.info("server"))["run_id"]
    assert (await rebuild_stage.redis.get("pairing:{busy}:whole")).decode() == run_id


async def test_one_replica_rebuilds_at_a_time_and_a_lost_claim_marks_nothing(rebuild_stage) -> None:
    registry = rebuild_stage.registry
    assert await registry.claim_rebuild("another replica", 60)
    assert not await rebuild_stage.rebuild().rebuild()
    assert not await registry.whole() and rebuild_stage.rebuilds() == 0
    # The holder renews its own claim; nobody else takes it meanwhile.
    await rebuild_stage.redis.expire("pairing:{busy}:rebuilding", 5)
    assert await registry.claim_rebuild("another replica", 60)
    assert await rebuild_stage.redis.ttl("pairing:{busy}:rebuilding") > 5
    assert not await registry.claim_rebuild("a third replica", 60)
    # A claim lost before the end (lapsed, taken over, flushed) is neither renewed nor marks anything.
    run_id = (await rebuild_stage.redis.info("server"))["run_id"]
    await rebuild_stage.redis.delete("pairing:{busy}:rebuilding")
    assert not await registry.renew_rebuild("another replica", 60)
    assert not await registry.mark_whole("another replica", run_id)
    assert not await registry.whole()
    # A replica finding the registry whole once it has the claim leaves it, and gives the claim up.
    assert await rebuild_stage.rebuild().rebuild()
    assert not await rebuild_stage.rebuild().rebuild() and rebuild_stage.rebuilds() == 1
    assert await registry.claim_rebuild("a third replica", 60)


async def test_a_failed_rebuild_gives_its_claim_up_and_marks_nothing(rebuild_stage) -> None:
    unreachable = rebuild_stage.settings.model_copy(update={"kafka_bootstrap_servers": f"127.0.0.1:{free_port()}"})
    with pytest.raises(KafkaError):
        await rebuild_stage.rebuild(unreachable).rebuild()
    assert not await rebuild_stage.registry.whole() and rebuild_stage.rebuilds() == 0
    assert await rebuild_stage.registry.claim_rebuild("the next try", 60)


class FlushedMidway(BusyRebuild):
    """A rebuild during which Redis loses everything (a flush), once its ends are replayed."""

    async def _started(self, batch) -> None:  # type: ignore[no-untyped-def]
        if not getattr(self, "flushed", False):
            self.flushed = True
            await self.registry.redis.flushall()
        await super()._started(batch)


async def test_a_registry_lost_during_its_rebuild_is_not_marked_whole(rebuild_stage) -> None:
    """The ends replayed before the loss are gone: marked whole, finished games would make players busy."""
    seats, _ = await _site_history(rebuild_stage)
    flushed = FlushedMidway(rebuild_stage.registry, rebuild_stage.pool, rebuild_stage.settings,
                            PairingMetrics.create(Metrics("pairing-busy-flush")).busy_rebuilds, "pairing-busy-test",
                            check_seconds=0.2, lease_seconds=60)
    assert not await flushed.rebuild()
    assert not await rebuild_stage.registry.whole()
    assert await rebuild_stage.rebuild().rebuild()
    players = [p for pair in seats.values() for p in pair]
    assert await rebuild_stage.registry.busy(players) == {*seats["running"], *seats["ours_running"],
                                                          *seats["old_running"]}


def test_a_failing_check_is_retried_less_and_less_often_but_at_least_every_minute() -> None:
    assert [retry_pause(5.0, failures) for failures in range(6)] == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert retry_pause(0.2, 3) == 1.6
    assert retry_pause(5.0, 100_000) == 60.0  # no overflow after a day of failures


class SlowReplay(BusyRebuild):
    """A replay that takes far longer than its lease: only renewals keep its claim."""

    async def _replay(self) -> int:
        await asyncio.sleep(30)
        return 0


async def test_a_long_replay_renews_its_claim_and_stops_when_it_loses_it(rebuild_stage) -> None:
    slow = SlowReplay(rebuild_stage.registry, rebuild_stage.pool, rebuild_stage.settings,
                      PairingMetrics.create(Metrics("pairing-busy-slow")).busy_rebuilds, "pairing-busy-test",
                      check_seconds=0.2, lease_seconds=2)
    rebuilding = asyncio.create_task(slow.rebuild())
    await asyncio.sleep(2.6)  # past the first lease: renewed, so nobody else may take it
    assert not rebuilding.done()
    assert not await rebuild_stage.registry.claim_rebuild("another replica", 60)
    await rebuild_stage.redis.delete("pairing:{busy}:rebuilding")  # lost (a flush, a lapse)
    assert await asyncio.wait_for(rebuilding, 5) is False
    assert not await rebuild_stage.registry.whole()
