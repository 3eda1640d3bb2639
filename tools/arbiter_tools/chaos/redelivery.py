"""Redelivery for the chaos suite: every event delivered again, in order or shuffled; topics read back.

`redeliver_in_order` (the stopped services get consumer groups that committed nothing: every
event is delivered again, in order), `rewind_group` (commit the earliest offsets for a consumer
group whose members are stopped; see `redeliver_in_order` for why the suite does not use it),
`replay_shuffled` (a replaying proxy: every record published again, same key, value and headers,
in a seeded random order: every event delivered again, out of order), `read_topic` (every record
of a topic from the beginning), `group_lag`, `commit_at_ends`, `wait_caught_up`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata
from google.protobuf.message import DecodeError

from arbiter.kit.events import Topic
from arbiter.kit.fields import event_check
from arbiter.kit.kafka import topic_partitions
from arbiter_tools.chaos.faults import FaultCounts
from arbiter_tools.devstack.stack import SERVICE_GROUPS, SystemStack


def _topic_names(topics: Iterable[str | Topic]) -> list[str]:
    return [t.name if isinstance(t, Topic) else t for t in topics]


async def rewind_group(bootstrap: str, group_id: str, topics: Iterable[str | Topic],
                       counts: FaultCounts | None = None, timeout: float = 60.0) -> int:
    """Commit the earliest offsets for `group_id` on `topics`; return how many events will be delivered again.

    The group's members must be stopped. The commit comes from members of the group: tansu
    refuses commits from outside (generation -1) even for an empty group. One member per topic:
    tansu can leave a group all of whose members left wedged for the next joiner (a lone member
    subscribed to all four of pairing's topics waited for minutes), and members of one topic
    each have always been handed their partitions within seconds in our runs.
    """
    names = _topic_names(topics)
    members = [AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False,
                                auto_offset_reset="earliest", max_poll_records=1) for _ in names]
    redelivered = 0
    try:
        for member, name in zip(members, names, strict=False):
            await member.start()
            member.subscribe([name])
        wanted = [await topic_partitions(member, [name]) for member, name in zip(members, names, strict=False)]
        deadline = time.monotonic() + timeout
        while any(set(m.assignment()) != set(w) for m, w in zip(members, wanted, strict=False)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id} did not hand every partition of {names} over in {timeout:.0f} s"
                                   " (is the service stopped?)")
            await asyncio.gather(*(m.getmany(timeout_ms=200, max_records=1) for m in members))
        for member, partitions in zip(members, wanted, strict=False):
            if not partitions:
                continue
            beginning = await member.beginning_offsets(partitions)
            for tp in partitions:
                committed = await member.committed(tp)
                redelivered += max(0, (committed or 0) - beginning[tp])
            await member.commit({tp: OffsetAndMetadata(beginning[tp], "") for tp in partitions})
    finally:
        await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)
    if counts is not None:
        counts.rewinds += 1
        counts.events_redelivered += redelivered
    return redelivered


def group_prefix(stack: SystemStack) -> str:
    """What `stack`'s services prepend to their consumer group ids (KAFKA_GROUP_PREFIX)."""
    return stack.consumer_group("")


async def rewind_service(stack: SystemStack, name: str, counts: FaultCounts | None = None) -> int:
    """Rewind every consumer group of service `name` (stopped) to the beginning; return the events redelivered."""
    # Joining a group takes the broker a while (tansu: about 18 s): every group at once.
    found = await asyncio.gather(*(rewind_group(stack.kafka_bootstrap, stack.consumer_group(group), topics, counts)
                                   for group, topics in SERVICE_GROUPS[name].items()))
    return sum(found)


@contextlib.asynccontextmanager
async def _at_true_ends(
    bootstrap: str, group_id: str, topics: Iterable[str | Topic]
) -> AsyncIterator[tuple[AIOKafkaConsumer, dict[TopicPartition, int]]]:
    """A consumer of `group_id` holding every partition of `topics` (no group join), with their true ends."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, _topic_names(topics))
        consumer.assign(partitions)
        yield consumer, await true_ends(consumer, partitions)
    finally:
        await consumer.stop()


async def group_lag(bootstrap: str, group_id: str, topics: Iterable[str | Topic]) -> int:
    """Records on `topics` not yet committed by `group_id`."""
    async with _at_true_ends(bootstrap, group_id, topics) as (consumer, ends):
        lag = 0
        for tp, end in ends.items():
            committed = await consumer.committed(tp)
            lag += max(0, end - (committed or 0))
        return lag


async def commit_at_ends(bootstrap: str, group_id: str, topics: Iterable[str | Topic]) -> dict[TopicPartition, int]:
    """Commit `group_id` at the true end of every partition of `topics`: it reads only what comes next.

    Returns those ends. A group that committed nothing reads from the beginning; one placed at the
    end skips the history of a broker that others used before.
    """
    async with _at_true_ends(bootstrap, group_id, topics) as (consumer, ends):
        if ends:  # topics not made yet hold no history to skip
            await consumer.commit({tp: OffsetAndMetadata(end, "") for tp, end in ends.items()})
        return ends


async def redeliver_in_order(stack: SystemStack, tag: str, counts: FaultCounts | None = None) -> int:
    """Every event delivered again, in order: the (stopped) services of `stack` get consumer groups that
    have committed nothing (KAFKA_GROUP_PREFIX + `tag`), so once restarted they read every topic from
    the beginning; return how many events that delivers again.

    Rather than `rewind_group`: tansu can leave a group all of whose members left wedged for the next
    joiner, and a rewind makes every member leave (the pairing service, one consumer for four topics,
    then never became SERVING again). A group that never committed is what a rewind makes, too.
    """
    if "KAFKA_GROUP_PREFIX" in stack.environ:
        raise ValueError("KAFKA_GROUP_PREFIX is set in the stack's environment: its groups cannot be renewed")
    stack.kafka_group_prefix = f"{group_prefix(stack)}{tag}."
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.kafka_bootstrap, enable_auto_commit=False)
    await consumer.start()
    total = 0
    try:
        for groups in SERVICE_GROUPS.values():
            for topics in groups.values():
                partitions = await topic_partitions(consumer, list(topics))
                if partitions:
                    consumer.assign(partitions)
                    total += sum((await true_ends(consumer, partitions)).values())
    finally:
        await consumer.stop()
    if counts is not None:
        counts.rewinds += 1
        counts.events_redelivered += total
    return total


async def wait_caught_up(bootstrap: str, name: str, timeout: float = 120.0, prefix: str = "") -> float:
    """Block until every consumer group of service `name` has committed every record; return the seconds.

    `prefix`: the system's KAFKA_GROUP_PREFIX (`group_prefix(stack)`).
    """
    started = time.monotonic()
    while True:
        lags = [await group_lag(bootstrap, prefix + g, t) for g, t in SERVICE_GROUPS[name].items()]
        if sum(lags) == 0:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{name} still {sum(lags)} records behind after {timeout:.0f} s")
        await asyncio.sleep(0.5)


async def _poll_quiet(consumer: AIOKafkaConsumer, quiet_polls: int = 2, timeout: float = 120.0) -> list[Any]:
    """Poll the assigned partitions until `quiet_polls` polls in a row bring nothing; return the records."""
    out: list[Any] = []
    quiet = 0
    deadline = time.monotonic() + timeout
    while quiet < quiet_polls:
        if time.monotonic() > deadline:
            raise TimeoutError(f"records kept coming for {timeout:.0f} s")
        batches = await consumer.getmany(timeout_ms=300, max_records=5000)
        found = [record for records in batches.values() for record in records]
        out += found
        quiet = 0 if found else quiet + 1
    return out


async def true_ends(consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
    """Each partition's end offset (one past its last record), for `consumer`, which has them assigned.

    tansu's high watermark is one past the *first* record of the partition's last record batch
    (a batch of 5 gives 1, not 5), so `end_offsets` alone hides the rest of that batch: the
    last batch is read to find where it really ends.
    """
    ends = await consumer.end_offsets(list(partitions))
    for tp in partitions:
        consumer.seek(tp, max(0, ends[tp] - 1))
    for record in await _poll_quiet(consumer):
        tp = TopicPartition(record.topic, record.partition)
        ends[tp] = max(ends[tp], record.offset + 1)
    return ends


async def _read_records(bootstrap: str, names: Sequence[str]) -> list[Any]:
    """Every record of the topics `names` from the beginning to their current end, in (partition, offset) order."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, names)
        if not partitions:
            return []
        consumer.assign(partitions)
        ends = await true_ends(consumer, partitions)
        # seek(), not seek_to_beginning(): that one races the reset assign() starts (to the end, by
        # default), which now and then won and made a whole read come back empty.
        for tp, offset in (await consumer.beginning_offsets(partitions)).items():
            consumer.seek(tp, offset)
        records: list[Any] = []
        deadline = time.monotonic() + 120
        while True:
            records += [r for r in await _poll_quiet(consumer) if r.offset < ends[TopicPartition(r.topic, r.partition)]]
            short = [tp for tp in partitions if await consumer.position(tp) < ends[tp]]
            if not short:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {sorted(map(str, short))} to the end")
    finally:
        await consumer.stop()
    order = {tp: n for n, tp in enumerate(partitions)}
    records.sort(key=lambda r: (order[TopicPartition(r.topic, r.partition)], r.offset))
    return records


async def read_topic(bootstrap: str, topic: Topic) -> list[Any]:
    """Every event of `topic` from the beginning to its current end, decoded, in (partition, offset) order.

    A record the services' consumers would set aside (a poison record a fault or a careless producer
    left: undecodable, or failing the same field checks) is skipped: what is read is what they act on.
    """
    check = event_check(topic.message.DESCRIPTOR, (topic.key_field,))
    out: list[Any] = []
    for record in await _read_records(bootstrap, [topic.name]):
        try:
            event = topic.decode(record.value or b"")
        except DecodeError:
            continue
        if check(event) is None:
            out.append(event)
    return out


async def read_raw(bootstrap: str, topics: Iterable[str | Topic]) -> list[tuple[str, bytes | None, bytes, list[Any]]]:
    """Every record of `topics` from the beginning to their current end: (topic, key, value, headers)."""
    return [(r.topic, r.key, r.value, list(r.headers)) for r in await _read_records(bootstrap, _topic_names(topics))]


async def replay_shuffled(bootstrap: str, topics: Iterable[str | Topic], seed: int,
                          counts: FaultCounts | None = None) -> int:
    """A replaying proxy: every record of `topics` published again, same key, value and headers, in a
    seeded random order across topics and partitions; return how many.

    Consumers see each event a second time, most of them after later events of the same game
    (a GameRequested after its GameFinished, a move after the result): nothing may change twice.
    """
    records = await read_raw(bootstrap, topics)
    random.Random(seed).shuffle(records)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        sent = [await producer.send(topic, value, key=key, headers=headers) for topic, key, value, headers in records]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    if counts is not None:
        counts.replays += 1
        counts.events_replayed_out_of_order += len(records)
    return len(records)
