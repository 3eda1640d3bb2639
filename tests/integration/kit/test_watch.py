"""The kit's Watch hub on a real Redis: changes in order, a slow stream dropped, watches per aggregate bounded."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest
import redis.asyncio as aioredis

from arbiter.contracts import arena_pb2 as ap
from arbiter.contracts import arena_pb2_grpc, common_pb2
from arbiter.kit import watch
from arbiter.kit.errors import ResourceExhausted


class _Hub(watch.WatchHub[ap.ArenaChange]):
    message_type = ap.ArenaChange
    noun = "arena"

    def __init__(self, redis: aioredis.Redis, **limits: int) -> None:
        super().__init__(redis, **limits)
        # A channel family of its own, so that runs of this test never hear each other.
        self.channel_prefix = f"test-watch-{uuid.uuid4().hex[:8]}:"


def _change(name: str, player: str = "") -> ap.ArenaChange:
    return ap.ArenaChange(change=name, player_id=player)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.from_url(redis_url)
    yield client
    await client.aclose()


async def _until_dropped(subscription: watch.Subscription[ap.ArenaChange]) -> None:
    # A wait for the reader to see the overflow, not a measure of how long it takes.
    for _ in range(1000):
        if subscription.dropped:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the slow watch was never dropped")


async def test_changes_arrive_in_order_singly_and_in_batches(redis: aioredis.Redis) -> None:
    hub = _Hub(redis)
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


async def test_a_stream_ends_at_its_time_limit(redis: aioredis.Redis) -> None:
    hub = _Hub(redis)
    subscription = await hub.subscribe("a_1", max_seconds=0.05)
    assert await subscription.next() is None
    await subscription.close()


async def test_a_watch_too_far_behind_is_dropped_and_leaves_redis_while_others_hear_everything(
    redis: aioredis.Redis,
) -> None:
    hub = _Hub(redis, max_queued=3)
    slow = await hub.subscribe("a_1", max_seconds=60)
    fast = await hub.subscribe("a_1", max_seconds=60)
    for number in range(10):
        await hub.publish_message("a_1", _change("result", f"p{number}"))
        change = await fast.next()
        assert change is not None and change.player_id == f"p{number}"
    await _until_dropped(slow)
    with pytest.raises(ResourceExhausted, match=r"arena a_1 fell more than 3 changes behind .* watch again"):
        await slow.next()
    # The dropped watch unsubscribed at once: Redis keeps nothing for it while its stream is still open.
    [(_, subscribers)] = await redis.pubsub_numsub(hub.channel_prefix + "a_1")
    assert subscribers == 1
    assert hub.watchers("a_1") == 2  # until its stream closes it
    await slow.close()
    await fast.close()
    assert hub.watchers("a_1") == 0


async def test_watches_of_one_aggregate_are_bounded_per_replica(redis: aioredis.Redis) -> None:
    hub = _Hub(redis, max_watchers=2)
    first = await hub.subscribe("a_1", max_seconds=60)
    second = await hub.subscribe("a_1", max_seconds=60)
    with pytest.raises(ResourceExhausted, match=r"arena a_1 has as many live watches as one replica serves \(2\)"):
        await hub.subscribe("a_1", max_seconds=60)
    other = await hub.subscribe("a_2", max_seconds=60)  # the bound is per arena
    await first.close()
    third = await hub.subscribe("a_1", max_seconds=60)
    for subscription in (second, other, third):
        await subscription.close()
    assert hub.watchers("a_1") == hub.watchers("a_2") == 0
    # Calls racing each other are bounded alike.
    raced = await asyncio.gather(*(hub.subscribe("a_3", max_seconds=60) for _ in range(3)), return_exceptions=True)
    assert sum(isinstance(r, ResourceExhausted) for r in raced) == 1
    for subscription in raced:
        if isinstance(subscription, watch.Subscription):
            await subscription.close()
    assert hub.watchers("a_3") == 0


def test_limits_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _Hub(aioredis.Redis(), max_queued=0)


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
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in stub.WatchArena(ap.WatchArenaRequest(arena_id=created.id)):
                pass
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"arena {created.id} has as many live watches as one replica serves (1)" in refused.value.details()
        first.cancel()
