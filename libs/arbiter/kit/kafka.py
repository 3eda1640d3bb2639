"""Kafka through FastStream: the broker, protobuf-decoding subscribers, topics, lag, outbox publishing."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.partitioner import DefaultPartitioner
from faststream import AckPolicy
from faststream.kafka import KafkaBroker
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from google.protobuf.message import DecodeError, Message

from arbiter.kit.events import ALL_TOPICS, Topic
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import OutboxRecord, UnpublishableEvent
from arbiter.kit.pause import pause
from arbiter.kit.settings import BROKER_MAX_MESSAGE_BYTES, KitSettings

log = logging.getLogger(__name__)

# What a handler reports back: "handled", "duplicate" or "ignored" (counted per topic).
Outcome = str
SingleHandler = Callable[[Message], Awaitable[Outcome | None]]
BatchHandler = Callable[[list[Message]], Awaitable[Outcome | None]]
# Records with their Kafka timestamps (ms), for reads that care when each was published.
StampedHandler = Callable[[list[tuple[int, Any]]], Awaitable[None]]
# A failing handler is retried from the same offset; the pause keeps a poison event from spinning.
RETRY_PAUSE_SECONDS = 0.5


def make_broker(settings: KitSettings, service: str, metrics: Metrics) -> KafkaBroker:
    """A FastStream Kafka broker for `service` with Prometheus middleware on its registry."""
    return KafkaBroker(
        settings.kafka_bootstrap_servers,
        client_id=f"arbiter-{service}",
        serializer=None,
        middlewares=[KafkaPrometheusMiddleware(registry=metrics.registry, app_name=f"arbiter-{service}")],
        request_timeout_ms=30_000,
        logger=logging.getLogger(f"arbiter.{service}.kafka"),
        # FastStream's "Received"/"Processed" lines for every fetched batch, at DEBUG: at INFO they were
        # a tenth of a consumer's CPU under load (mostly batches of events a service ignores).
        log_level=logging.DEBUG,
    )


def poll_without_idle_sleep(subscriber: Any) -> Any:
    """Make a FastStream batch subscriber wait out an empty poll in the poll itself, not in a sleep after it.

    FastStream's batch subscriber sleeps as long as its poll after every empty one, and a record
    arriving in that sleep waits for it: a short poll bought latency with an idle loop of 1000 /
    (2 x poll) turns a second, each a round of Python (about 1% of a core per consumer at 10 ms).
    aiokafka's getmany already returns as soon as records arrive, so here the poll alone waits,
    and only a poll that came back early and empty (a consumer that owns no partition) sleeps
    the rest of its time rather than spinning. The poll time and batch size are the ones the
    subscriber was made with (batch_timeout_ms, max_records).
    """
    poll_ms, max_records = subscriber.batch_timeout_ms, subscriber.max_records
    timeout = poll_ms / 1000

    async def get_msg(consumer: AIOKafkaConsumer) -> tuple[Any, ...]:
        began = time.monotonic()
        batches = await consumer.getmany(timeout_ms=poll_ms, max_records=max_records)
        if batches:
            return tuple(record for records in batches.values() for record in records)
        left = timeout - (time.monotonic() - began)
        if left > 0:
            await asyncio.sleep(left)
        return ()

    # An instance attribute: the consume loop looks get_msg up on the subscriber at every turn.
    subscriber.get_msg = get_msg
    return subscriber


def _undecodable(metrics: Metrics, topic_name: str) -> None:
    """Count and log a record that does not parse: it is skipped, or it would come back for ever."""
    metrics.events_consumed.labels(metrics.service, topic_name, "undecodable").inc()
    log.error("record skipped: it does not parse as this topic's message", extra={"topic": topic_name})


def _decoder(topic: Topic, metrics: Metrics) -> Callable[[Any], Awaitable[Any]]:
    """Decode a record (None if it does not parse) or a batch (without those that do not)."""
    def one(body: bytes) -> Message | None:
        try:
            return topic.decode(body)
        except DecodeError:
            _undecodable(metrics, topic.name)
            return None

    async def decode(message: Any) -> Any:
        if isinstance(message.body, list):
            return [event for event in map(one, message.body) if event is not None]
        return one(message.body)

    return decode


def subscribe(
    broker: KafkaBroker, settings: KitSettings, metrics: Metrics, topic: Topic, group_id: str,
    handler: SingleHandler | BatchHandler, *, batch: bool = False, max_records: int = 500,
) -> Any:
    """Consume `topic` in consumer group `group_id`, committing only after `handler` succeeded.

    The handler must be idempotent (see `arbiter.kit.idempotency`): after a crash the
    events since the last commit are delivered again.
    """
    service = metrics.service
    group_id = settings.kafka_group_prefix + group_id

    async def on_message(body: Any) -> None:
        if body is None or (batch and not body):
            return  # nothing in it parsed (counted while decoding)
        started = time.perf_counter()
        try:
            outcome = await handler(body) or "handled"
        except Exception:
            metrics.events_consumed.labels(service, topic.name, "error").inc(len(body) if batch else 1)
            log.exception("handler failed; the event will be delivered again", extra={"topic": topic.name})
            await asyncio.sleep(RETRY_PAUSE_SECONDS)
            raise
        metrics.handler_latency.labels(service, topic.name).observe(time.perf_counter() - started)
        metrics.events_consumed.labels(service, topic.name, outcome).inc(len(body) if batch else 1)

    options: dict[str, Any] = {
        "group_id": group_id,
        "ack_policy": AckPolicy.NACK_ON_ERROR,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": settings.kafka_session_timeout_ms,
        "heartbeat_interval_ms": settings.kafka_heartbeat_interval_ms,
        # A fetch waits at most this long for new records: every hop of a result -> pairing chain pays it.
        "fetch_max_wait_ms": settings.kafka_fetch_max_wait_ms,
        "fetch_min_bytes": settings.kafka_fetch_min_bytes,
        "decoder": _decoder(topic, metrics),
        "title": f"{group_id}:{topic.name}",
        "description": f"{topic.message.DESCRIPTOR.full_name} consumed by {group_id}",
    }
    if batch:
        options.update(batch=True, max_records=max_records, batch_timeout_ms=settings.kafka_batch_poll_ms)
    subscriber = broker.subscriber(topic.name, **options)
    if batch:
        poll_without_idle_sleep(subscriber)
    subscriber(on_message)
    return subscriber


def subscribe_many(
    broker: KafkaBroker, settings: KitSettings, metrics: Metrics, handlers: Mapping[Topic, BatchHandler],
    group_id: str, *, max_records: int = 500, fetch_min_bytes: int | None = None,
) -> Any:
    """Consume several topics with ONE consumer in group `group_id`; each topic's records go to its batch handler.

    `fetch_min_bytes` replaces KAFKA_FETCH_MIN_BYTES for this consumer alone.

    One consumer per service instead of one per topic: a single group join at start and after a
    restart, and one fetch loop instead of many (on tansu every fetch loop polls at the fetch wait).
    Within a batch each topic's handler gets that topic's records in partition order, topics in
    the order of their first record. Records of different topics were never ordered relative to
    each other (separate partitions), so handlers must not rely on that. The offsets are committed
    after every handler of the batch succeeded; if one fails the whole batch comes again, which
    idempotent handlers absorb.
    """
    if not handlers:
        raise ValueError("subscribe_many needs at least one topic")
    service = metrics.service
    group_id = settings.kafka_group_prefix + group_id
    by_name = {topic.name: (topic, handler) for topic, handler in handlers.items()}

    async def decode(message: Any) -> Any:
        records = message.raw_message if isinstance(message.raw_message, tuple) else (message.raw_message,)
        decoded = []
        for record in records:
            try:
                decoded.append((record.topic, by_name[record.topic][0].decode(record.value or b"")))
            except DecodeError:
                _undecodable(metrics, record.topic)
        return decoded

    async def on_batch(body: Any) -> None:
        grouped: dict[str, list[Message]] = {}
        for topic_name, event in body:
            grouped.setdefault(topic_name, []).append(event)
        for topic_name, batch in grouped.items():
            topic, handler = by_name[topic_name]
            started = time.perf_counter()
            try:
                outcome = await handler(batch) or "handled"
            except Exception:
                metrics.events_consumed.labels(service, topic_name, "error").inc(len(batch))
                log.exception("handler failed; the events will be delivered again", extra={"topic": topic_name})
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
                raise
            metrics.handler_latency.labels(service, topic_name).observe(time.perf_counter() - started)
            metrics.events_consumed.labels(service, topic_name, outcome).inc(len(batch))

    names = sorted(by_name)
    subscriber = broker.subscriber(
        *names,
        group_id=group_id,
        ack_policy=AckPolicy.NACK_ON_ERROR,
        auto_offset_reset="earliest",
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
        fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
        fetch_min_bytes=settings.kafka_fetch_min_bytes if fetch_min_bytes is None else fetch_min_bytes,
        decoder=decode,
        batch=True, max_records=max_records, batch_timeout_ms=settings.kafka_batch_poll_ms,
        title=f"{group_id}:{','.join(names)}",
        description=f"{', '.join(by_name[n][0].message.DESCRIPTOR.full_name for n in names)} consumed by {group_id}",
    )
    poll_without_idle_sleep(subscriber)
    subscriber(on_batch)
    return subscriber


def make_producer(settings: KitSettings, client_id: str) -> AIOKafkaProducer:
    """A plain aiokafka producer (not started): every replica acknowledges, sends gathered for 2 ms."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers, client_id=client_id,
        acks="all", linger_ms=2, request_timeout_ms=30_000, max_batch_size=settings.kafka_producer_batch_bytes,
    )


def make_outbox_producer(settings: KitSettings, service: str) -> AIOKafkaProducer:
    """The plain aiokafka producer the outbox relay publishes with (not started)."""
    return make_producer(settings, f"arbiter-{service}-outbox")


def partition_for_key(key: bytes, partitions: Sequence[int]) -> int:
    """The partition aiokafka's default partitioner picks for `key` among sorted `partitions`.

    murmur2 is pure Python in aiokafka (a twentieth of a publisher's CPU): a topic of one
    partition, as on the embedded broker, skips it.
    """
    if len(partitions) == 1:
        return partitions[0]
    return DefaultPartitioner()(key, partitions, partitions)


def outbox_publisher(producer: AIOKafkaProducer, max_message_bytes: int = BROKER_MAX_MESSAGE_BYTES,
                     ) -> Callable[[Sequence[OutboxRecord]], Awaitable[None]]:
    """Publish outbox records with their key and event headers, waiting for every acknowledgement.

    Records go straight to aiokafka as whole batches per partition: the relay is on every state
    change's path, and a `send` per record (partitioning, accumulator bookkeeping) was a quarter
    of the rating service's CPU. Partitions are chosen like `send` chooses them (murmur2 of the
    key over all partitions), so an aggregate's events land on one partition whoever publishes
    them, and records keep their outbox order within a partition. A batch takes any first record,
    however large: one whose batch alone would exceed the broker's `max_message_bytes` raises
    UnpublishableEvent, once the batches sent before it are acknowledged or failed.
    """
    async def publish(records: Sequence[OutboxRecord]) -> None:
        partitions_of: dict[str, list[int]] = {}
        by_partition: dict[tuple[str, int], list[tuple[bytes, OutboxRecord]]] = {}
        for record in records:
            partitions = partitions_of.get(record.topic)
            if partitions is None:
                partitions = partitions_of[record.topic] = sorted(await producer.partitions_for(record.topic))
            key = record.key.encode()
            partition = partition_for_key(key, partitions)
            by_partition.setdefault((record.topic, partition), []).append((key, record))
        deliveries = []
        for (topic, partition), items in by_partition.items():
            batch = producer.create_batch()
            for key, record in items:
                headers = [("event-id", record.event_id.encode()), ("event-type", record.event_type.encode())]
                if batch.append(key=key, value=record.payload, timestamp=None, headers=headers) is None:
                    deliveries.append(await producer.send_batch(batch, topic, partition=partition))
                    batch = producer.create_batch()
                    batch.append(key=key, value=record.payload, timestamp=None, headers=headers)
                if batch.record_count() == 1 and batch.size() > max_message_bytes:
                    # What went out before it is waited for: no delivery is left unawaited.
                    await asyncio.gather(*deliveries, return_exceptions=True)
                    raise UnpublishableEvent(record, f"a record batch of {batch.size()} bytes for it alone, more than "
                                                     f"the broker takes (KAFKA_MAX_MESSAGE_BYTES {max_message_bytes})")
            deliveries.append(await producer.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*deliveries)

    return publish


async def topic_partitions(consumer: AIOKafkaConsumer, topics: Sequence[str],
                           patience: float = 10.0) -> list[TopicPartition]:
    """The partitions of `topics` (none for a topic that does not exist once `patience` seconds have passed)."""
    found: list[TopicPartition] = []
    for topic in topics:
        parts = consumer.partitions_for_topic(topic)
        deadline = time.monotonic() + patience
        # A fresh consumer's metadata may not hold the topic yet: an empty answer here once made a
        # whole read return nothing. `topics()` asks the broker for every topic's metadata.
        while not parts and time.monotonic() < deadline:
            if topic not in await consumer.topics():
                break
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                await asyncio.sleep(0.2)
        found += [TopicPartition(topic, p) for p in sorted(parts or ())]
    return found


async def read_window(settings: KitSettings, topic: Topic, since_ms: int, handle: StampedHandler, *,
                      client_id: str, max_records: int = 2000, patience_polls: int = 20) -> int:
    """Pass `topic`'s records stamped from `since_ms` to its end now, with their stamps, to `handle`; return how many.

    For rebuilding state kept outside the log (a lost cache) while the service's consumers go
    on: they take what comes after the end offsets read here. The last fetch of a partition
    may bring a few later records along, which an idempotent handler absorbs; no upper bound
    on stamps is drawn, as producers' clocks need not agree with ours. Read outside any group.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap_servers, client_id=client_id, group_id=None,
        enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=30_000,
        fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
    )
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, [topic.name])
        if not partitions:
            return 0
        consumer.assign(partitions)
        beginnings = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
        starts = await consumer.offsets_for_times({tp: since_ms for tp in partitions})
        reading: set[TopicPartition] = set()
        for tp in partitions:
            if ends[tp] <= beginnings[tp]:
                consumer.pause(tp)
                continue
            # At the latest from the last record: tansu's end offset is one past the first record of
            # its last batch (devstack.chaos.true_ends), and a fetch from there brings the whole batch.
            found = starts.get(tp)
            consumer.seek(tp, min(found.offset, ends[tp] - 1) if found is not None else ends[tp] - 1)
            reading.add(tp)
        passed = 0
        idle_polls = 0
        while reading:
            # Everything fetched, no max_records: the position may pass a short end offset only once
            # the whole batch holding it has been taken, or the rest would be left behind unread.
            fetched = await consumer.getmany(timeout_ms=500)
            stamped: list[tuple[int, Message]] = []
            for tp, records in fetched.items():
                for record in records:
                    # tansu's time index answers the partition's start for most times: the stamp decides.
                    if record.timestamp < since_ms:
                        continue
                    try:
                        stamped.append((record.timestamp, topic.decode(record.value or b"")))
                    except DecodeError:
                        log.warning("skipped a record that does not decode",
                                    extra={"topic": topic.name, "partition": tp.partition, "offset": record.offset})
            for start in range(0, len(stamped), max_records):
                await handle(stamped[start:start + max_records])
            passed += len(stamped)
            for tp in list(reading):
                if await consumer.position(tp) >= ends[tp]:
                    reading.discard(tp)
                    consumer.pause(tp)
            idle_polls = 0 if fetched else idle_polls + 1
            if reading and idle_polls >= patience_polls:
                raise TimeoutError(f"{topic.name}: partitions {sorted(tp.partition for tp in reading)} "
                                   f"stopped short of their end offsets")
        return passed
    finally:
        await consumer.stop()


def owns_every_partition(consumer: AIOKafkaConsumer | None) -> bool:
    """Whether `consumer` is assigned every partition of the topics it subscribes to: no other consumes them."""
    topics = consumer.subscription() if consumer is not None else set()
    if consumer is None or not topics:
        return False
    assigned = consumer.assignment()
    for topic in topics:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions or any(TopicPartition(topic, partition) not in assigned for partition in partitions):
            return False
    return True


class SoleConsumer:
    """Whether a subscriber has had every partition of its topics to itself, unchanged, for `settle_seconds`.

    Right after a rebalance another replica may still be handling a batch of partitions it was
    just given up (aiokafka takes them away without waiting for it): the settling time covers it.
    """

    def __init__(self, subscriber: Callable[[], Any], settle_seconds: float) -> None:
        self.subscriber = subscriber
        self.settle_seconds = settle_seconds
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._since = 0.0

    def __call__(self) -> bool:
        """True once the subscriber's consumer has owned every partition, with no change, for the settling time."""
        consumer = getattr(self.subscriber(), "consumer", None)
        if not owns_every_partition(consumer):
            self._assignment = frozenset()
            return False
        assignment = frozenset(consumer.assignment())
        now = time.monotonic()
        if assignment != self._assignment:
            self._assignment, self._since = assignment, now
        return now - self._since >= self.settle_seconds


async def ensure_topics(bootstrap_servers: str, partitions: int, topics: Sequence[Topic] = ALL_TOPICS) -> None:
    """Create the topics that do not exist yet (idempotent, safe with replicas starting together)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=30_000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(t.name, num_partitions=partitions, replication_factor=1) for t in topics
                   if t.name not in existing]
        if missing:
            try:
                await admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass
    finally:
        await admin.close()


async def sample_consumer_lag(broker: KafkaBroker, metrics: Metrics) -> None:
    """Set the lag gauge of every partition assigned to this process's subscribers."""
    # Partitions moved to another replica by a rebalance must not keep their last value here.
    metrics.consumer_lag.clear()
    for subscriber in broker.subscribers:
        consumer = getattr(subscriber, "consumer", None)
        if consumer is None:
            continue
        for partition in consumer.assignment():
            end = consumer.highwater(partition)
            if end is None:
                continue
            position = await consumer.position(partition)
            metrics.consumer_lag.labels(metrics.service, partition.topic, str(partition.partition)).set(
                max(0, end - position)
            )


async def run_lag_monitor(broker: KafkaBroker, metrics: Metrics, stop: asyncio.Event, every: float = 5.0) -> None:
    """Sample consumer lag until `stop` is set."""
    while not stop.is_set():
        try:
            await sample_consumer_lag(broker, metrics)
        except Exception as error:  # the gauge is best effort; never take the service down for it
            log.debug("lag sample failed", extra={"error": repr(error)})
        await pause(stop, every)
