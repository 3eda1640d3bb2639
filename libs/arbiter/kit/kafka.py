"""Kafka through FastStream: the broker, protobuf-decoding subscribers, topics, lag, outbox publishing."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeGuard

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from aiokafka.errors import KafkaError, TopicAlreadyExistsError
from aiokafka.partitioner import DefaultPartitioner
from faststream import AckPolicy
from faststream.kafka import KafkaBroker
from faststream.security import BaseSecurity, SASLScram256, SASLScram512
from google.protobuf.message import DecodeError, Message

from arbiter.kit.events import ALL_TOPICS, Topic
from arbiter.kit.fields import event_check
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import OutboxRecord, UnpublishableEvent
from arbiter.kit.partitions import caught_up, co_partitioned, key_settled
from arbiter.kit.pause import pause
from arbiter.kit.poison import ConsumerGuard, ConsumerNews, SetAside
from arbiter.kit.settings import BROKER_MAX_MESSAGE_BYTES, KafkaSecuritySettings, KitSettings
from arbiter.kit.trace import TRACE_HEADER, payload_trace

log = logging.getLogger(__name__)

# What a handler reports back: "handled", "duplicate" or "ignored" (counted per topic).
Outcome = str
# A handler takes its topic's message type, which a Topic does not carry for the type checker: Any.
SingleHandler = Callable[[Any], Awaitable[Outcome | None]]
BatchHandler = Callable[[list[Any]], Awaitable[Outcome | None]]
# Records with their Kafka timestamps (ms), for reads that care when each was published.
StampedHandler = Callable[[list[tuple[int, Any]]], Awaitable[None]]


def kafka_security(settings: KafkaSecuritySettings) -> dict[str, Any]:
    """The aiokafka keyword arguments that authenticate a client (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*).

    Every producer, consumer and admin client of ours takes them; {} for PLAINTEXT.
    """
    if settings.kafka_security_protocol == "PLAINTEXT":
        return {}
    options: dict[str, Any] = {
        "security_protocol": settings.kafka_security_protocol,
        "sasl_mechanism": settings.kafka_sasl_mechanism,
        "sasl_plain_username": settings.kafka_sasl_username,
        "sasl_plain_password": settings.kafka_sasl_password.get_secret_value(),
    }
    if settings.kafka_security_protocol == "SASL_SSL":
        from aiokafka.helpers import create_ssl_context

        options["ssl_context"] = create_ssl_context()
    return options


def _broker_security(settings: KafkaSecuritySettings) -> BaseSecurity | None:
    """`kafka_security` as FastStream's broker takes it."""
    options = kafka_security(settings)
    if not options:
        return None
    scram = SASLScram256 if options["sasl_mechanism"] == "SCRAM-SHA-256" else SASLScram512
    return scram(options["sasl_plain_username"], options["sasl_plain_password"],
                 ssl_context=options.get("ssl_context"), use_ssl="ssl_context" in options)


def make_broker(settings: KitSettings, service: str) -> KafkaBroker:
    """A FastStream Kafka broker for `service`.

    Its Kafka series are the kit's own (arbiter_events_consumed_total, arbiter_event_handler_seconds,
    arbiter_events_published_total, arbiter_consumer_lag), counted by `subscribe`, `subscribe_many`
    and the outbox relay: FastStream's Prometheus middleware would add a second family of
    faststream_* series counting the same records under other names.
    """
    return KafkaBroker(
        settings.kafka_bootstrap_servers,
        security=_broker_security(settings),
        client_id=f"arbiter-{service}",
        serializer=None,
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
    (2 x poll) turns a second, each a round of Python (tests/bench/bench_idle_services.py).
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


def _following(catch_up: PartitionCatchUp | None) -> dict[str, Any]:
    """The subscriber options that let `catch_up` follow a consumer and lay its partitions out alike."""
    if catch_up is None:
        return {}
    return {"listener": catch_up, "partition_assignment_strategy": (catch_up.assignor, RoundRobinPartitionAssignor)}


async def _records_of(message: Any) -> tuple[Any, ...]:
    """The decoder of every subscriber: the fetched records themselves, checked and decoded by the guard."""
    raw = message.raw_message
    return raw if isinstance(raw, tuple) else (raw,)


async def _tolerant_parser(fetched: Any, parse: Callable[[Any], Awaitable[Any]]) -> Any:
    """FastStream's parser, but a record whose header FastStream cannot read as text is parsed without headers.

    FastStream decodes every header value as UTF-8 to build its own message; a header of other
    bytes (or none) made it fail on the record at every delivery. Nothing here reads FastStream's
    headers: the record keeps its own for the guard (and the set-aside table).
    """
    try:
        return await parse(fetched)
    except (UnicodeDecodeError, AttributeError):
        if isinstance(fetched, tuple):
            message = await parse(tuple(dataclasses.replace(record, headers=()) for record in fetched))
        else:
            message = await parse(dataclasses.replace(fetched, headers=()))
        message.raw_message = fetched
        return message


def subscribe(
    broker: KafkaBroker, settings: KitSettings, metrics: Metrics, topic: Topic, group_id: str,
    handler: SingleHandler | BatchHandler, *, set_aside: SetAside, batch: bool = False, max_records: int = 500,
    catch_up: PartitionCatchUp | None = None, news: ConsumerNews | None = None,
) -> Any:
    """Consume `topic` in consumer group `group_id`, committing only after `handler` succeeded.

    The handler must be idempotent (see `arbiter.kit.idempotency`): after a crash the
    events since the last commit are delivered again. It sees only events that passed the
    kit's field rules; the rest, and any event it keeps failing on, go to `set_aside`
    (`arbiter.kit.poison`). `catch_up` follows which partitions the consumer holds and has read up.
    """
    group_id = settings.kafka_group_prefix + group_id
    metrics.expect_consumed([topic.name])
    guard = ConsumerGuard(group_id, metrics, set_aside, [topic], settings.consumer_max_attempts,
                          settings.consumer_retry_backoff_seconds, news)
    # One shape for both: a single-event handler is called with the one event of its "batch".
    as_batch: BatchHandler = handler if batch else (lambda events: handler(events[0]))

    async def on_message(records: Any) -> None:
        for accepted in (await guard.intake(records)).values():
            await guard.run(topic.name, as_batch, accepted)

    options: dict[str, Any] = {
        "group_id": group_id,
        "ack_policy": AckPolicy.NACK_ON_ERROR,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": settings.kafka_session_timeout_ms,
        "heartbeat_interval_ms": settings.kafka_heartbeat_interval_ms,
        # A fetch waits at most this long for new records: every hop of a result -> pairing chain pays it.
        "fetch_max_wait_ms": settings.kafka_fetch_max_wait_ms,
        "fetch_min_bytes": settings.kafka_fetch_min_bytes,
        "parser": _tolerant_parser,
        "decoder": _records_of,
        "title": f"{group_id}:{topic.name}",
        "description": f"{topic.message.DESCRIPTOR.full_name} consumed by {group_id}",
    }
    if batch:
        options.update(batch=True, max_records=max_records, batch_timeout_ms=settings.kafka_batch_poll_ms)
    subscriber = broker.subscriber(topic.name, **options, **_following(catch_up))
    if batch:
        poll_without_idle_sleep(subscriber)
    subscriber(on_message)
    if catch_up is not None:
        catch_up.follow(lambda: getattr(subscriber, "consumer", None))
    return subscriber


def subscribe_many(
    broker: KafkaBroker, settings: KitSettings, metrics: Metrics, handlers: Mapping[Topic, BatchHandler],
    group_id: str, *, set_aside: SetAside, max_records: int = 500, fetch_min_bytes: int | None = None,
    catch_up: PartitionCatchUp | None = None, news: ConsumerNews | None = None,
) -> Any:
    """Consume several topics with ONE consumer in group `group_id`; each topic's records go to its batch handler.

    `fetch_min_bytes` replaces KAFKA_FETCH_MIN_BYTES for this consumer alone; `catch_up` follows
    which partitions the consumer holds and has read up.

    One consumer per service instead of one per topic: a single group join at start and after a
    restart, and one fetch loop instead of many (on tansu every fetch loop polls at the fetch wait).
    Within a batch each topic's handler gets that topic's records in partition order, topics in
    the order of their first record. Records of different topics were never ordered relative to
    each other (separate partitions), so handlers must not rely on that. The offsets are committed
    after every handler of the batch succeeded or set its poison aside (`arbiter.kit.poison`); if
    one fails for an outage the whole batch comes again, which idempotent handlers absorb.
    """
    if not handlers:
        raise ValueError("subscribe_many needs at least one topic")
    group_id = settings.kafka_group_prefix + group_id
    by_name = {topic.name: handler for topic, handler in handlers.items()}
    metrics.expect_consumed(by_name)
    guard = ConsumerGuard(group_id, metrics, set_aside, list(handlers), settings.consumer_max_attempts,
                          settings.consumer_retry_backoff_seconds, news)

    async def on_batch(records: Any) -> None:
        for topic_name, accepted in (await guard.intake(records)).items():
            await guard.run(topic_name, by_name[topic_name], accepted)

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
        parser=_tolerant_parser,
        decoder=_records_of,
        batch=True, max_records=max_records, batch_timeout_ms=settings.kafka_batch_poll_ms,
        title=f"{group_id}:{','.join(names)}",
        description=f"{', '.join(t.message.DESCRIPTOR.full_name for t in handlers)} consumed by {group_id}",
        **_following(catch_up),
    )
    poll_without_idle_sleep(subscriber)
    subscriber(on_batch)
    if catch_up is not None:
        catch_up.follow(lambda: getattr(subscriber, "consumer", None))
    return subscriber


def make_producer(settings: KitSettings, client_id: str) -> AIOKafkaProducer:
    """A plain aiokafka producer (not started): every replica acknowledges, sends gathered for 2 ms."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers, client_id=client_id,
        acks="all", linger_ms=2, request_timeout_ms=30_000, max_batch_size=settings.kafka_producer_batch_bytes,
        **kafka_security(settings),
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

    The headers are `event-id`, `event-type` and `trace-id`: the record's copy of its payload's
    trace id, or the payload's own for a record put in the outbox without the copy (a set-aside
    event put back), so that header and payload always name the same chain.

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
                trace = record.trace_id or payload_trace(record.payload)
                if trace:
                    headers.append((TRACE_HEADER, trace.encode()))
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
        fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms, **kafka_security(settings),
    )
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, [topic.name])
        if not partitions:
            return 0
        consumer.assign(partitions)
        beginnings = await consumer.beginning_offsets(partitions)
        ends = await consumer.end_offsets(partitions)
        starts = await consumer.offsets_for_times(dict.fromkeys(partitions, since_ms))
        reading: set[TopicPartition] = set()
        for tp in partitions:
            if ends[tp] <= beginnings[tp]:
                consumer.pause(tp)
                continue
            # At the latest from the last record: tansu's end offset is one past the first record of
            # its last batch (arbiter_tools.chaos.true_ends), and a fetch from there brings the whole batch.
            found = starts.get(tp)
            consumer.seek(tp, min(found.offset, ends[tp] - 1) if found is not None else ends[tp] - 1)
            reading.add(tp)
        check = event_check(topic.message.DESCRIPTOR, (topic.key_field,))
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
                        event = topic.decode(record.value or b"")
                    except DecodeError:
                        log.warning("skipped a record that does not decode",
                                    extra={"topic": topic.name, "partition": tp.partition, "offset": record.offset})
                        continue
                    # The consumers of the topic set such a record aside; a rebuild only passes it by.
                    problem = check(event)
                    if problem is not None:
                        log.warning("skipped a record that breaks the field rules", extra={
                            "topic": topic.name, "partition": tp.partition, "offset": record.offset,
                            "problem": problem})
                        continue
                    stamped.append((record.timestamp, event))
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


def owns_every_partition(consumer: AIOKafkaConsumer | None) -> TypeGuard[AIOKafkaConsumer]:
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


class CoPartitionAssignor(AbstractPartitionAssignor):
    """Gives partition `p` of every topic to one process in every group it shares (`partitions.co_partitioned`).

    One instance per process, shared by its consumers: its token rides in each member's join
    metadata, so the groups of the same processes lay partitions out alike. A group whose
    members do not all offer it (a rolling upgrade) falls back to round robin.
    """

    name = "arbiter-copartition"
    version = 0

    def __init__(self, token: str) -> None:
        self.token = token

    def metadata(self, topics: Any) -> ConsumerProtocolMemberMetadata:
        """The member's subscription, with this process's token as user data."""
        return ConsumerProtocolMemberMetadata(self.version, list(topics), self.token.encode())

    def assign(self, cluster: ClusterMetadata,
               members: Mapping[str, ConsumerProtocolMemberMetadata]) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Run by the group's leader: every subscribed partition to the member `co_partitioned` picks."""
        subscribed = {member: ((metadata.user_data or b"").decode(errors="replace"), set(metadata.subscription))
                      for member, metadata in members.items()}
        partitions = {topic: cluster.partitions_for_topic(topic) or set()
                      for _token, topics in subscribed.values() for topic in topics}
        layout = co_partitioned(subscribed, partitions)
        return {member: ConsumerProtocolMemberAssignment(self.version, sorted(layout[member].items()), b"")
                for member in members}

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Nothing kept: the layout is computed afresh at every rebalance."""


class PartitionCatchUp(ConsumerRebalanceListener):
    """Which partitions one consumer holds and has read up to the end offset they had when it got them.

    The consumer's rebalance listener (`subscribe(catch_up=...)`). A partition handed over may hold
    the previous holder's unread events; it counts as read up once the group's committed offset
    (what the handlers finished) reaches the end offset read after the handover (`partitions.caught_up`).
    """

    def __init__(self, assignor: CoPartitionAssignor) -> None:
        self.assignor = assignor
        self._consumer_of: Callable[[], AIOKafkaConsumer | None] = lambda: None
        # Held partitions -> the end offset read after they came (None until read).
        self._marks: dict[TopicPartition, int | None] = {}
        self._settled: set[TopicPartition] = set()
        # Counts handovers: offsets read across one (the listener runs between awaits) are not used.
        self._handovers = 0

    def follow(self, consumer_of: Callable[[], AIOKafkaConsumer | None]) -> None:
        """Read offsets through the consumer `consumer_of` gives (none before it starts)."""
        self._consumer_of = consumer_of

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Partitions taken away are no longer held (a rebalance hands them back as new)."""
        self._handovers += 1
        for partition in revoked:
            self._marks.pop(partition, None)
            self._settled.discard(partition)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Partitions given are held but not read up: their end offset is read at the next look."""
        self._handovers += 1
        for partition in assigned:
            self._marks[partition] = None
            self._settled.discard(partition)

    def consumer(self) -> AIOKafkaConsumer | None:
        """The consumer followed, once started."""
        return self._consumer_of()

    async def settled(self) -> dict[str, frozenset[int]]:
        """Held and read-up partitions by topic; reads the offsets it still needs (none once all are settled)."""
        consumer = self._consumer_of()
        if consumer is None:
            return {}
        held = consumer.assignment()
        for partition in list(self._marks):
            if partition not in held:
                await self.on_partitions_revoked({partition})
        new = {partition for partition in held if partition not in self._marks}
        if new:
            await self.on_partitions_assigned(new)
        handovers = self._handovers
        try:
            unread = [partition for partition, mark in self._marks.items() if mark is None]
            ends = await consumer.end_offsets(unread) if unread else {}
            if handovers == self._handovers:
                self._marks.update(ends)
                for partition, mark in list(self._marks.items()):
                    if partition in self._settled:
                        continue
                    committed = await consumer.committed(partition)
                    if handovers != self._handovers:
                        break
                    if caught_up(mark, committed):
                        self._settled.add(partition)
        except (KafkaError, OSError, TimeoutError) as error:
            # Not read up as far as this look knows: the next look asks again.
            log.info("partition offsets unavailable", extra={"error": repr(error)})
        by_topic: dict[str, set[int]] = {}
        for partition in self._settled:
            by_topic.setdefault(partition.topic, set()).add(partition.partition)
        return {topic: frozenset(partitions) for topic, partitions in by_topic.items()}


class SettledKeys:
    """The keys this process may act on: their partition of every topic of every consumer held and read up."""

    def __init__(self, catch_ups: Sequence[PartitionCatchUp], cached_keys: int = 65_536) -> None:
        self.catch_ups = catch_ups
        # murmur2 is pure Python: due games another replica decides are looked at again at every look.
        self._partition_of = functools.lru_cache(maxsize=cached_keys)(self._place)

    @staticmethod
    def _place(key: str, partitions: tuple[int, ...]) -> int:
        return partition_for_key(key.encode(), list(partitions))

    async def view(self) -> Callable[[str], bool] | None:
        """Whether a key may be acted on now; None when every partition is held and read up (every key may)."""
        settled: dict[str, frozenset[int]] = {}
        partitions: dict[str, list[int]] = {}
        everything = True
        for catch_up in self.catch_ups:
            consumer = catch_up.consumer()
            settled.update(await catch_up.settled())
            if consumer is not None:
                for topic in consumer.subscription():
                    partitions[topic] = sorted(consumer.partitions_for_topic(topic) or ())
            everything = everything and owns_every_partition(consumer)
        if everything and all(set(partitions[topic]) <= settled.get(topic, frozenset()) for topic in partitions):
            return None
        if not partitions:
            return lambda _key: False
        # Topics of one partition count put a key on the same partition: one murmur2 per count.
        topics_by_count: dict[tuple[int, ...], list[str]] = {}
        for topic, topic_partitions in partitions.items():
            topics_by_count.setdefault(tuple(topic_partitions), []).append(topic)

        def decidable(key: str) -> bool:
            placed: dict[str, int] = {}
            for topic_partitions, topics in topics_by_count.items():
                if not topic_partitions:
                    return False  # the topic's metadata is not known yet
                placed.update(dict.fromkeys(topics, self._partition_of(key, topic_partitions)))
            return key_settled(placed, settled)

        return decidable


async def ensure_topics(bootstrap_servers: str, partitions: int, topics: Sequence[Topic] = ALL_TOPICS,
                        security: Mapping[str, Any] | None = None) -> list[str]:
    """Create the topics that do not exist yet (idempotent, safe with replicas starting together); return their names.

    `security`: the client's `kafka_security` options.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=30_000, **(security or {}))
    try:
        # Inside: a readiness check that times out during the start still closes the client.
        await admin.start()
        existing = set(await admin.list_topics())
        missing = [NewTopic(t.name, num_partitions=partitions, replication_factor=1) for t in topics
                   if t.name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(missing)
        return [topic.name for topic in missing]
    finally:
        await admin.close()


class TopicKeeper:
    """The broker's side of readiness: it answers, and holds every topic of ours, those it lost created again.

    A broker that comes back without its storage (tansu on memory, a Kafka whose disks were
    replaced) has no topics: producers then fail with UnknownTopicOrPartition and consumers own no
    partition, for good, while the broker answers every ping. The services create the topics at
    start (`connect`), so they own them: each check creates again what is missing, and the
    consumers' next metadata refresh finds them and rejoins their groups. The events the broker
    held are gone with it; `arbiter republish` sends the outboxes' again (README.md, "Losing the broker").
    """

    def __init__(self, settings: KitSettings, metrics: Metrics, topics: Sequence[Topic] = ALL_TOPICS) -> None:
        self.settings = settings
        self.topics = topics
        self.recreated = metrics.counter(
            "arbiter_broker_topics_recreated_total",
            "Topics of ours the broker no longer had (it lost its storage), created again by this replica",
        ).labels(metrics.service)

    async def check(self) -> bool:
        """Whether the broker answers with every topic there, creating again the ones it lost."""
        missing = await ensure_topics(self.settings.kafka_bootstrap_servers, self.settings.kafka_partitions,
                                      self.topics, kafka_security(self.settings))
        if missing:
            self.recreated.inc(len(missing))
            log.warning("the broker had lost topics of ours: created them again; what they held is gone "
                        "(README.md, Losing the broker: arbiter republish)", extra={"topics": missing})
        return True


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
