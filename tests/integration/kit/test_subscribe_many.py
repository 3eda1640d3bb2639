"""One consumer for several topics (kit): each handler gets its own topic's events; a failure redelivers the batch."""

from __future__ import annotations

import uuid

from aiokafka import AIOKafkaProducer
from faststream.kafka import KafkaBroker

from arbiter.contracts import common_pb2
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import make_broker, owns_every_partition, subscribe, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import LoggedSetAside, StoredSetAside
from arbiter.kit.settings import KitSettings
from tests.support.polling import eventually


def _settings(infra_env) -> KitSettings:
    return KitSettings(
        kafka_bootstrap_servers=infra_env["KAFKA_BOOTSTRAP_SERVERS"], redis_url=infra_env["REDIS_URL"],
        database_url=infra_env["DATABASE_URL"], grpc_port=0, metrics_port=0, kafka_heartbeat_interval_ms=500,
    )


def _collector(tag: str, into: list[str]):
    """A batch handler keeping the game ids of this test's events (tagged) in `into`."""
    async def collect(batch: list[ev.GameFinished] | list[ev.GameAbandoned]) -> str:
        into.extend(e.game_id for e in batch if e.game_id.startswith(tag))
        return "handled"

    return collect


def _setup(infra_env, service: str) -> tuple[KitSettings, str, Metrics, KafkaBroker]:
    """Settings, a tag for this test's game ids, and a broker whose metrics are the service's."""
    settings = _settings(infra_env)
    metrics = Metrics(service)
    return settings, uuid.uuid4().hex[:8], metrics, make_broker(settings, service)


async def test_one_consumer_dispatches_by_topic_and_redelivers_after_a_failure(infra_env) -> None:
    settings, tag, metrics, broker = _setup(infra_env, "kit_many")
    finished: list[str] = []
    started: list[str] = []
    failures_left = [1]

    async def on_finished(batch: list[ev.GameFinished]) -> str:
        ours = [e.game_id for e in batch if e.game_id.startswith(tag)]
        if ours and failures_left[0]:
            failures_left[0] -= 1
            raise RuntimeError("first delivery fails on purpose")
        finished.extend(ours)
        return "handled"

    async def on_started(batch: list[ev.GameStarted]) -> str:
        started.extend(e.game_id for e in batch if e.game_id.startswith(tag))
        return "handled"

    subscriber = subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: on_finished,
                                                            events.GAME_STARTED: on_started}, f"kit-many-{tag}",
                                set_aside=LoggedSetAside(metrics))
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        await eventually(lambda: bool(subscriber.consumer.assignment()))
        assert {tp.topic for tp in subscriber.consumer.assignment()} == {"game.finished", "game.started"}
        # The group's only member holds every partition of both topics: no other replica consumes them.
        assert owns_every_partition(subscriber.consumer)
        for i in range(3):
            game_id = f"{tag}-{i}"
            await producer.send_and_wait("game.started", ev.GameStarted(game_id=game_id).SerializeToString(),
                                         key=game_id.encode())
            await producer.send_and_wait("game.finished", ev.GameFinished(
                game_id=game_id, result=common_pb2.GAME_RESULT_DRAW).SerializeToString(), key=game_id.encode())
        await eventually(lambda: len(set(finished)) == 3 and len(set(started)) == 3)
        assert failures_left == [0]
        assert set(finished) == {f"{tag}-{i}" for i in range(3)}
        # The failed batch came again; what it held of the other topic may have been handled twice,
        # which is why every handler is idempotent.
        assert metrics.registry.get_sample_value(
            "arbiter_events_consumed_total", {"service": "kit_many", "topic": "game.finished", "outcome": "error"}) >= 1
    finally:
        await producer.stop()
        await broker.stop()


async def test_a_record_that_does_not_parse_is_set_aside_not_redelivered_for_ever(infra_env, kit_pool) -> None:
    """A poison record (not the topic's message) must not hold its partition: every kind of consumer sets it aside."""
    settings, tag, metrics, broker = _setup(infra_env, "kit_poison")
    set_aside = StoredSetAside(kit_pool, metrics)
    many: list[str] = []
    batched: list[str] = []
    single: list[str] = []

    async def on_single(event: ev.TournamentCancelled) -> str:
        if event.tournament_id.startswith(tag):
            single.append(event.tournament_id)
        return "handled"

    subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: _collector(tag, many)}, f"kit-poison-many-{tag}",
                   set_aside=set_aside)
    subscribe(broker, settings, metrics, events.GAME_ABANDONED, f"kit-poison-batch-{tag}", _collector(tag, batched),
              set_aside=set_aside, batch=True)
    subscribe(broker, settings, metrics, events.TOURNAMENT_CANCELLED, f"kit-poison-one-{tag}", on_single,
              set_aside=set_aside)
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    poison = b"\xff\xff\xff not a protobuf message"
    try:
        for topic, good in ((events.GAME_FINISHED, ev.GameFinished(game_id=f"{tag}-after")),
                            (events.GAME_ABANDONED, ev.GameAbandoned(game_id=f"{tag}-after")),
                            (events.TOURNAMENT_CANCELLED, ev.TournamentCancelled(tournament_id=f"{tag}-after"))):
            await producer.send_and_wait(topic.name, poison, key=tag.encode())
            await producer.send_and_wait(topic.name, good.SerializeToString(), key=tag.encode())
        await eventually(lambda: many == batched == single == [f"{tag}-after"])

        kept = await kit_pool.fetch(
            "SELECT consumer_group, topic, key, value, reason FROM consumer_set_aside WHERE consumer_group LIKE $1"
            " AND key = $2 ORDER BY topic", f"kit-poison-%-{tag}", tag.encode())
        assert [(r["consumer_group"], r["topic"], r["value"], r["reason"]) for r in kept] == [
            (f"kit-poison-batch-{tag}", "game.abandoned", poison, "undecodable"),
            (f"kit-poison-many-{tag}", "game.finished", poison, "undecodable"),
            (f"kit-poison-one-{tag}", "tournament.cancelled", poison, "undecodable"),
        ]

        def set_aside_count(topic: str) -> float:
            return metrics.registry.get_sample_value(
                "arbiter_events_set_aside_total", {"service": "kit_poison", "topic": topic, "reason": "undecodable"}
            ) or 0.0

        # At least: a fresh group reads the topics from their beginning, other tests' poison included.
        assert all(set_aside_count(t.name) >= 1 for t in (events.GAME_FINISHED, events.GAME_ABANDONED,
                                                          events.TOURNAMENT_CANCELLED))
    finally:
        await producer.stop()
        await broker.stop()


async def test_a_consumer_that_waits_for_more_bytes_still_gets_a_lone_record_when_the_wait_ends(infra_env) -> None:
    """KAFKA_FETCH_MIN_BYTES reaches both kinds of consumer; the fetch wait still bounds how long a record waits."""
    settings, tag, metrics, broker = _setup(infra_env, "kit_min_bytes")
    settings = settings.model_copy(update={"kafka_fetch_min_bytes": 1024 * 1024, "kafka_fetch_max_wait_ms": 200})
    many: list[str] = []
    single: list[str] = []
    answered_sooner: list[str] = []

    subscribers = [
        subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: _collector(tag, many)},
                       f"kit-min-bytes-many-{tag}", set_aside=LoggedSetAside(metrics)),
        subscribe(broker, settings, metrics, events.GAME_ABANDONED, f"kit-min-bytes-one-{tag}",
                  _collector(tag, single), set_aside=LoggedSetAside(metrics), batch=True),
        # A consumer of its own may ask for other than the process's KAFKA_FETCH_MIN_BYTES.
        subscribe_many(broker, settings, metrics, {events.GAME_STARTED: _collector(tag, answered_sooner)},
                       f"kit-min-bytes-own-{tag}", set_aside=LoggedSetAside(metrics), fetch_min_bytes=1),
    ]
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        await eventually(lambda: all(s.consumer.assignment() for s in subscribers))
        # What the broker is asked for: a fetch answers at 1 MiB or after 200 ms, whichever comes first.
        assert [s.consumer._fetch_min_bytes for s in subscribers] == [1024 * 1024, 1024 * 1024, 1]
        # One small record each, far below the bytes asked for: delivered all the same once the wait ends.
        await producer.send_and_wait("game.finished", ev.GameFinished(game_id=f"{tag}-f").SerializeToString(),
                                     key=f"{tag}-f".encode())
        await producer.send_and_wait("game.abandoned", ev.GameAbandoned(game_id=f"{tag}-a").SerializeToString(),
                                     key=f"{tag}-a".encode())
        await eventually(lambda: many == [f"{tag}-f"] and single == [f"{tag}-a"])
    finally:
        await producer.stop()
        await broker.stop()
