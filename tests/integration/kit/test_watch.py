"""The kit's Watch hub on a real Redis: one feed connection per process, changes in order, read once per
aggregate, a slow stream dropped without slowing the others, limits per aggregate and per process with
a time to retry, a lost connection ending the streams and the next watch connecting anew."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import grpc
import pytest
import redis.asyncio as aioredis

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, common_pb2
from arbiter.kit import watch
from arbiter.kit.errors import ResourceExhausted, Unavailable
from arbiter.kit.grpcserver import RETRY_AFTER_METADATA, GrpcService, start_grpc_server
from arbiter.kit.metrics import Metrics
from arbiter.kit.redisclient import lone_connection
from services.arena.servicer import RPC_ROLES
from tests.support.polling import eventually

_RETRY = r"retry in (5|6|7|8|9|10) s"


class _Hub(watch.WatchHub[ap.ArenaChange]):
    message_type = ap.ArenaChange
    noun = "arena"

    def __init__(self, redis: aioredis.Redis, feed: watch.WatchFeed | None = None, **limits: int) -> None:
        super().__init__(redis, feed, **limits)
        # A channel family of its own, so that runs of this test never hear each other.
        self.channel_prefix = f"test-watch-{uuid.uuid4().hex[:8]}:"


def _change(name: str, player: str = "") -> ap.ArenaChange:
    return ap.ArenaChange(change=name, player_id=player)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def feed_name() -> str:
    """The client name of this test's feed connection in Redis."""
    return f"test-watch-feed-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def make_feed(redis_url: str, feed_name: str) -> AsyncIterator[Callable[..., watch.WatchFeed]]:
    feeds: list[watch.WatchFeed] = []

    def make(**options: object) -> watch.WatchFeed:
        feed = watch.WatchFeed(lambda: lone_connection(redis_url, client_name=feed_name), **options)  # type: ignore[arg-type]
        feeds.append(feed)
        return feed

    yield make
    for feed in feeds:
        await feed.close()


async def _feed_clients(redis: aioredis.Redis, name: str) -> list[dict[str, object]]:
    return [client for client in await redis.client_list() if client.get("name") == name]


async def test_changes_arrive_in_order_singly_and_in_batches(redis: aioredis.Redis, make_feed) -> None:
    # The hub publishes on a client of its own, as another replica would: only Redis joins the two.
    hub = _Hub(redis, make_feed())
    subscription = await hub.subscribe("a_1", max_seconds=60)
    assert hub.watchers("a_1") == 1
    await hub.publish_message("a_1", _change("joined", "p1"))
    await hub.publish_message("a_2", _change("joined", "elsewhere"))  # another arena: not heard
    await hub.publish_messages([("a_1", _change("paired")), ("a_2", _change("paired")), ("a_1", _change("finished"))])
    heard = [await subscription.next() for _ in range(3)]
    assert [(c.change, c.player_id) for c in heard if c is not None] == [("joined", "p1"), ("paired", ""),
                                                                      ("finished", "")]
    assert heard[-1] is not None and heard[-1].change in watch.FINAL_CHANGES
    await subscription.close()
    await subscription.close()  # twice is harmless
    assert hub.watchers("a_1") == 0


async def test_a_stream_ends_at_its_time_limit(redis: aioredis.Redis, make_feed) -> None:
    hub = _Hub(redis, make_feed())
    subscription = await hub.subscribe("a_1", max_seconds=0.05)
    assert await subscription.next() is None
    await subscription.close()


async def test_every_stream_of_a_process_shares_one_connection_and_unsubscribes_when_the_last_leaves(
    redis: aioredis.Redis, make_feed, feed_name: str,
) -> None:
    feed = make_feed()
    hub = _Hub(redis, feed)
    streams = [await hub.subscribe(f"a_{n % 3}", max_seconds=60) for n in range(150)]
    [client] = await _feed_clients(redis, feed_name)
    assert client["sub"] == "3"  # one channel per arena watched, however many streams
    for arena in ("a_0", "a_1", "a_2"):
        [(_, subscribers)] = await redis.pubsub_numsub(hub.channel_prefix + arena)
        assert subscribers == 1
    await hub.publish_message("a_1", _change("joined", "p1"))
    for stream in streams[1::3]:
        change = await stream.next()
        assert change is not None and change.player_id == "p1"
    for stream in streams:
        await stream.close()
    assert feed.streams == 0

    async def unsubscribed() -> bool:
        [client] = await _feed_clients(redis, feed_name)
        return client["sub"] == "0"

    await eventually(unsubscribed, "the feed left every channel")
    assert len(await _feed_clients(redis, feed_name)) == 1  # the connection stays for the next watch


async def test_changes_are_completed_once_per_aggregate_for_all_its_streams(redis: aioredis.Redis, make_feed) -> None:
    hub = _Hub(redis, make_feed())
    completed: list[list[str]] = []

    async def complete(arena_id: str, changes: list[ap.ArenaChange]) -> None:
        completed.append([change.change for change in changes])
        for change in changes:
            change.arena.id = arena_id
            change.arena.settings.name = f"read {len(completed)}"

    streams = [await hub.subscribe("a_1", max_seconds=60, complete=complete) for _ in range(50)]
    await hub.publish_messages([("a_1", _change("joined", "p1")), ("a_1", _change("joined", "p2"))])
    for stream in streams:
        first, second = await stream.next(), await stream.next()
        assert first is not None and second is not None
        assert (first.player_id, second.player_id) == ("p1", "p2")
        assert first.arena.id == "a_1" and first.arena.settings.name.startswith("read ")
    # Two changes for fifty streams: read once, or twice if the second arrived while the first was read.
    assert sum(len(batch) for batch in completed) == 2 and len(completed) <= 2
    for stream in streams:
        await stream.close()


async def test_a_failed_read_ends_the_aggregates_streams_with_unavailable(redis: aioredis.Redis, make_feed) -> None:
    hub = _Hub(redis, make_feed())

    async def complete(arena_id: str, changes: list[ap.ArenaChange]) -> None:
        raise ConnectionError("PostgreSQL went away")

    broken = [await hub.subscribe("a_1", max_seconds=60, complete=complete) for _ in range(3)]
    other = await hub.subscribe("a_2", max_seconds=60)
    await hub.publish_messages([("a_1", _change("joined", "p1")), ("a_2", _change("joined", "p2"))])
    for stream in broken:
        with pytest.raises(Unavailable, match="the state of arena a_1 could not be read; watch again"):
            await stream.next()
    change = await other.next()
    assert change is not None and change.player_id == "p2"
    for stream in (*broken, other):
        await stream.close()


async def test_a_watch_too_far_behind_is_dropped_while_the_others_hear_everything(
    redis: aioredis.Redis, make_feed,
) -> None:
    hub = _Hub(redis, make_feed(), max_queued=3)
    slow = await hub.subscribe("a_1", max_seconds=60)
    fast = await hub.subscribe("a_1", max_seconds=60)
    for number in range(10):
        await hub.publish_message("a_1", _change("result", f"p{number}"))
        change = await fast.next()
        assert change is not None and change.player_id == f"p{number}"
    assert slow.dropped
    with pytest.raises(ResourceExhausted, match=rf"arena a_1 fell more than 3 changes behind .* watch again.*{_RETRY}"):
        await slow.next()
    assert hub.watchers("a_1") == 2  # until its stream closes it
    await slow.close()
    await fast.close()
    assert hub.watchers("a_1") == 0


async def test_a_stream_nobody_reads_does_not_hold_back_the_others(redis: aioredis.Redis, make_feed) -> None:
    hub = _Hub(redis, make_feed(), max_queued=1000)
    unread = [await hub.subscribe("a_1", max_seconds=60) for _ in range(100)]
    reader = await hub.subscribe("a_1", max_seconds=60)
    for number in range(500):
        await hub.publish_message("a_1", _change("result", f"p{number}"))
        change = await reader.next()
        assert change is not None and change.player_id == f"p{number}"
    assert not any(stream.dropped for stream in unread)  # still within their bound
    for stream in (*unread, reader):
        await stream.close()


async def test_watches_are_bounded_per_aggregate_and_per_process_with_a_time_to_retry(
    redis: aioredis.Redis, make_feed,
) -> None:
    feed = make_feed(max_streams=4, metrics=watch.WatchMetrics.create(Metrics("test")))
    hub = _Hub(redis, feed, max_watchers=2)
    first = await hub.subscribe("a_1", max_seconds=60)
    second = await hub.subscribe("a_1", max_seconds=60)
    with pytest.raises(ResourceExhausted,
                       match=rf"arena a_1 has as many live watches as one replica serves \(2\); {_RETRY}") as refused:
        await hub.subscribe("a_1", max_seconds=60)
    assert 5_000 <= refused.value.retry_after_ms <= 10_000
    other = await hub.subscribe("a_2", max_seconds=60)  # the bound is per arena
    await first.close()
    third = await hub.subscribe("a_1", max_seconds=60)
    # Another hub of the same process (the feed) counts towards the process's bound.
    elsewhere = _Hub(redis, feed)
    fourth = await elsewhere.subscribe("t_1", max_seconds=60)
    with pytest.raises(ResourceExhausted,
                       match=rf"this replica serves as many Watch streams as it may \(4\); {_RETRY}") as refused:
        await hub.subscribe("a_3", max_seconds=60)
    assert 5_000 <= refused.value.retry_after_ms <= 10_000
    refusals = feed.metrics.refused  # type: ignore[union-attr]
    assert refusals.labels("test", "max_watchers")._value.get() == 1
    assert refusals.labels("test", "max_streams")._value.get() == 1
    assert feed.streams == 4
    for subscription in (second, other, third, fourth):
        await subscription.close()
    assert hub.watchers("a_1") == hub.watchers("a_2") == feed.streams == 0
    # Calls racing each other are bounded alike.
    raced = await asyncio.gather(*(hub.subscribe("a_3", max_seconds=60) for _ in range(3)), return_exceptions=True)
    assert sum(isinstance(r, ResourceExhausted) for r in raced) == 1
    for subscription in raced:
        if isinstance(subscription, watch.Subscription):
            await subscription.close()
    assert hub.watchers("a_3") == feed.streams == 0


async def test_streams_end_with_unavailable_when_the_feed_loses_redis_and_the_next_watch_reconnects(
    redis: aioredis.Redis, make_feed, feed_name: str,
) -> None:
    hub = _Hub(redis, make_feed())
    streams = [await hub.subscribe("a_1", max_seconds=60) for _ in range(5)]
    [client] = await _feed_clients(redis, feed_name)
    await redis.client_kill_filter(_id=client["id"])
    for stream in streams:
        with pytest.raises(Unavailable, match=r"lost Redis\); watch again for a fresh snapshot"):
            await stream.next()
        await stream.close()
    # The next watch is served on a new connection; the changes committed after it are heard.

    async def resubscribed() -> bool:
        try:
            streams[:] = [await hub.subscribe("a_1", max_seconds=60)]
        except Unavailable:  # refused at once for a moment after a failed connect
            return False
        return True

    await eventually(resubscribed, "a watch served again")
    [new_client] = await _feed_clients(redis, feed_name)
    assert new_client["id"] != client["id"]
    await hub.publish_message("a_1", _change("joined", "p9"))
    change = await streams[0].next()
    assert change is not None and change.player_id == "p9"
    await streams[0].close()


async def test_a_watch_while_redis_is_unreachable_is_refused_with_unavailable(redis: aioredis.Redis) -> None:
    feed = watch.WatchFeed(lambda: lone_connection("redis://127.0.0.1:1/0", socket_connect_timeout=1))
    hub = _Hub(redis, feed)
    with pytest.raises(Unavailable, match="Redis is unreachable"):
        await hub.subscribe("a_1", max_seconds=60)
    assert hub.watchers("a_1") == feed.streams == 0
    await feed.close()


async def test_watching_again_and_again_never_misses_a_change_committed_after_the_subscribe(
    redis: aioredis.Redis, make_feed,
) -> None:
    # Each stream leaves (UNSUBSCRIBE) as the next one arrives (SUBSCRIBE): the answers come in order.
    hub = _Hub(redis, make_feed())
    for number in range(100):
        stream = await hub.subscribe("a_1", max_seconds=60)
        await hub.publish_message("a_1", _change("joined", f"p{number}"))
        change = await stream.next()
        assert change is not None and change.player_id == f"p{number}"
        await stream.close()


async def test_a_hub_without_a_feed_only_publishes(redis: aioredis.Redis) -> None:
    with pytest.raises(RuntimeError, match="only publishes"):
        await _Hub(redis).subscribe("a_1", max_seconds=60)


def test_limits_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _Hub(aioredis.Redis(), max_queued=0)
    with pytest.raises(ValueError, match="at least 1"):
        watch.WatchFeed(lambda: lone_connection("redis://127.0.0.1:1/0"), max_streams=0)


@pytest.fixture
def one_watch_arena(start_system):
    """The arena service serving one WatchArena stream per arena."""
    return start_system(("arena",), extra_env={"WATCH_MAX_WATCHERS": "1"})


async def test_the_service_reads_its_watch_limit_from_the_environment(one_watch_arena) -> None:
    creator = common_pb2.Actor(player_id=f"watched-{uuid.uuid4().hex[:6]}", kind=common_pb2.ACCOUNT_KIND_REGISTERED)
    settings = ap.ArenaSettings(name="Watched", variant="international", duration_minutes=60,
                                time_control=common_pb2.FischerControl(base_seconds=180, increment_seconds=2))
    async with grpc.aio.insecure_channel(one_watch_arena.services["arena"].grpc_address) as channel:
        stub = arena_pb2_grpc.ArenaServiceStub(channel)
        created = await stub.CreateArena(ap.CreateArenaRequest(actor=creator, settings=settings))
        first = stub.WatchArena(ap.WatchArenaRequest(arena_id=created.id))
        snapshot = await first.read()
        assert snapshot.change == "snapshot"
        refused_call = stub.WatchArena(ap.WatchArenaRequest(arena_id=created.id))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in refused_call:
                pass
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"arena {created.id} has as many live watches as one replica serves (1)" in refused.value.details()
        advice = dict(refused.value.trailing_metadata() or ())
        assert 5_000 <= int(advice[RETRY_AFTER_METADATA]) <= 10_000
        first.cancel()


class _CountingArenas(arena_pb2_grpc.ArenaServiceServicer):
    """Tells how much foreground work was under way while it answered."""

    def __init__(self, foreground: watch.Foreground) -> None:
        self.foreground = foreground

    async def GetArena(self, request: ap.GetArenaRequest, context: object) -> ap.Arena:
        return ap.Arena(id=request.arena_id, players=self.foreground.working)

    async def WatchArena(
        self, request: ap.WatchArenaRequest, context: object,
    ) -> AsyncIterator[ap.ArenaChange]:
        yield ap.ArenaChange(change="snapshot", player_id=str(self.foreground.working))


async def test_the_calls_served_are_foreground_work_and_watch_streams_are_not() -> None:
    foreground = watch.Foreground()
    servicer = _CountingArenas(foreground)
    server, _health, port = await start_grpc_server(
        "127.0.0.1", 0, [GrpcService("arbiter.contracts.ArenaService",
                                     lambda s: arena_pb2_grpc.add_ArenaServiceServicer_to_server(servicer, s),
                                     roles=RPC_ROLES)],
        Metrics("foreground"), foreground=foreground)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)
            assert (await stub.GetArena(ap.GetArenaRequest(arena_id="a_1"))).players == 1
            snapshot = await stub.WatchArena(ap.WatchArenaRequest(arena_id="a_1")).read()
            assert snapshot.player_id == "0"
        assert foreground.working == 0
    finally:
        await server.stop(0)
