"""Poison records for a topic: what a careless or hostile producer can put on Kafka, which gRPC never lets in.

    records = await publish_poison("127.0.0.1:9092", events.GAME_FINISHED)   # one record of each kind
    [r.kind for r in records]   # ['undecodable', 'nul', 'huge_id', 'unknown_enum', 'bad_timestamp']

Every consumer of the topic must set each of them aside (arbiter.kit.poison) and go on with the
next record. The kinds, each on an otherwise plausible event of the topic's message:
- undecodable: bytes that are not a protobuf message at all;
- nul: a NUL character in every string field, ids included (PostgreSQL text cannot hold one);
- huge_id: a 60,000-character aggregate id (the record key too);
- unknown_enum: every enum field at a value no version defines;
- bad_timestamp: every timestamp past the year 9999.
A kind the message has no field for (an event without enums) is left out.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, cast

from aiokafka import AIOKafkaProducer
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from arbiter.kit.events import Topic, event_type_of, topic_named
from arbiter.kit.fields import EVENT_ID_FIELDS, enum_type_of, message_type_of
from arbiter.kit.kafka import kafka_security
from arbiter.kit.settings import KafkaSecuritySettings, load_settings

POISON_KINDS: Final = ("undecodable", "nul", "huge_id", "unknown_enum", "bad_timestamp")
# Not a protobuf message: field 31 with wire type 7, which does not exist.
UNDECODABLE_VALUE: Final = b"\xff\xff\xff poison: not a protobuf message"
HUGE_ID_LENGTH: Final = 60_000
UNKNOWN_ENUM_VALUE: Final = 999
# Seconds past 9999-12-31: no datetime holds them.
FAR_FUTURE_SECONDS: Final = 2**62
_TIMESTAMP: Final = "google.protobuf.Timestamp"


@dataclass(frozen=True)
class PoisonRecord:
    """One poison record as published: its kind, topic, key and value (and the event id it carries, if any)."""

    kind: str
    topic: str
    key: bytes
    value: bytes
    event_id: str = ""


def plausible_event(topic: Topic, tag: str) -> Message:
    """An event of `topic` with every field set to something ordinary: ids made from `tag`, known enums, now."""
    event = topic.message()
    _fill(event, tag, 0)
    event.meta.event_id = f"{tag}-{uuid.uuid4().hex[:12]}"  # type: ignore[attr-defined]  # every event has an EventMeta
    return event


def poison_records(topic: Topic, tag: str | None = None, kinds: Sequence[str] = POISON_KINDS) -> list[PoisonRecord]:
    """One record of each of `kinds` for `topic` (kinds its message has no field for are left out)."""
    unknown = set(kinds) - set(POISON_KINDS)
    if unknown:
        raise ValueError(f"unknown poison kinds {sorted(unknown)}; the kinds are {', '.join(POISON_KINDS)}")
    tag = tag or f"poison-{uuid.uuid4().hex[:8]}"
    records = []
    for kind in kinds:
        if kind == "undecodable":
            records.append(PoisonRecord(kind, topic.name, f"{tag}-undecodable".encode(), UNDECODABLE_VALUE))
            continue
        event = plausible_event(topic, f"{tag}-{kind.replace('_', '-')}")
        if kind == "nul":
            changed = _set_strings(event, lambda text: f"{text}\x00poison")
        elif kind == "huge_id":
            setattr(event, topic.key_field, "x" * HUGE_ID_LENGTH)
            changed = True
        elif kind == "unknown_enum":
            changed = _set_enums(event, UNKNOWN_ENUM_VALUE)
        else:
            changed = _set_timestamps(event, FAR_FUTURE_SECONDS)
        if changed:
            records.append(PoisonRecord(kind, topic.name, topic.key_of(event).encode(), event.SerializeToString(),
                                        event.meta.event_id))  # type: ignore[attr-defined]  # every event has an EventMeta
    return records


async def publish_poison(bootstrap: str, topic: Topic | str, *, kinds: Sequence[str] = POISON_KINDS,
                         tag: str | None = None) -> list[PoisonRecord]:
    """Publish one poison record of each of `kinds` to `topic` with its key and event headers; return them."""
    topic = topic_named(topic) if isinstance(topic, str) else topic
    records = poison_records(topic, tag, kinds)
    # KAFKA_SECURITY_PROTOCOL and KAFKA_SASL_* from the environment, as every client of ours.
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=30_000,
                                max_request_size=1024 * 1024, **kafka_security(load_settings(KafkaSecuritySettings)))
    await producer.start()
    try:
        for record in records:
            headers = [("event-type", event_type_of(topic.message()).encode())]
            if record.event_id:
                headers.insert(0, ("event-id", record.event_id.encode()))
            await producer.send_and_wait(record.topic, record.value, key=record.key, headers=headers)
    finally:
        await producer.stop()
    return records


def _descriptor_of(message: Message) -> Descriptor:
    """The message's descriptor (protobuf's stubs also name the C implementation's class, of the same API)."""
    return cast(Descriptor, message.DESCRIPTOR)


def _fill(message: Message, tag: str, depth: int) -> None:
    descriptor = _descriptor_of(message)
    chosen_oneofs: set[str] = set()
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None:
            if oneof.name in chosen_oneofs:
                continue
            chosen_oneofs.add(oneof.name)
        value = _ordinary(field, tag, depth)
        if value is None:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            target = getattr(message, field.name).add() if field.is_repeated else getattr(message, field.name)
            if message_type_of(field).full_name == _TIMESTAMP:
                target.seconds = int(time.time())
            else:
                _fill(target, tag, depth + 1)
        elif field.is_repeated:
            getattr(message, field.name).append(value)
        else:
            setattr(message, field.name, value)


def _ordinary(field: FieldDescriptor, tag: str, depth: int) -> object | None:
    """The ordinary value of `field` (True for a message to fill in), None to leave it out."""
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if message_type_of(field).GetOptions().map_entry or depth >= 4:
            return None
        return True
    if field.type == FieldDescriptor.TYPE_STRING:
        if field.name in EVENT_ID_FIELDS or field.name == "id":
            side = {"white_id": "-white", "black_id": "-black", "loser_id": "-white"}.get(field.name, "")
            return f"{tag}{side}"
        return "poison" if field.name != "variant" else "international"
    if field.type == FieldDescriptor.TYPE_ENUM:
        defined = [value.number for value in enum_type_of(field).values if value.number]
        return defined[0] if defined else None
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return 1.0
    if field.type == FieldDescriptor.TYPE_BYTES:
        return b"poison"
    return 1


def _set_strings(message: Message, change: Callable[[str], str]) -> bool:
    changed = False
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_STRING:
            if field.is_repeated:
                values = getattr(message, field.name)
                for index, text in enumerate(list(values)):
                    values[index] = change(text)
            else:
                setattr(message, field.name, change(value))
            changed = True
        elif field.type == FieldDescriptor.TYPE_MESSAGE and message_type_of(field).full_name != _TIMESTAMP:
            for item in (value if field.is_repeated else (value,)):
                changed |= _set_strings(item, change)
    return changed


def _set_enums(message: Message, number: int) -> bool:
    changed = False
    for field in _descriptor_of(message).fields:
        if field.type == FieldDescriptor.TYPE_ENUM and not field.is_repeated:
            setattr(message, field.name, number)
            changed = True
        elif field.type == FieldDescriptor.TYPE_MESSAGE and not field.is_repeated and message.HasField(field.name) \
                and message_type_of(field).full_name != _TIMESTAMP:
            changed |= _set_enums(getattr(message, field.name), number)
    return changed


def _set_timestamps(message: Message, seconds: int) -> bool:
    changed = False
    for field in _descriptor_of(message).fields:
        if field.type != FieldDescriptor.TYPE_MESSAGE or field.is_repeated or not message.HasField(field.name):
            continue
        if message_type_of(field).full_name == _TIMESTAMP:
            getattr(message, field.name).seconds = seconds
            changed = True
        else:
            changed |= _set_timestamps(getattr(message, field.name), seconds)
    return changed
