"""The consumers' boundary alone: what checking each record costs next to decoding it, per consumed topic.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). No broker, no
database: serialized events of every consumed topic (every field set, as arbiter_tools.poison's
plausible events) are
1. decoded only (what a consumer did before it checked anything);
2. decoded and checked by `arbiter.kit.fields.event_check` (the compiled checks the consumers run);
3. decoded and checked by a plain walk over `ListFields` with a function per field (the generic way
   the compiled checks replace, kept here as the yardstick);
4. for a batch of `--batch` game.finished records, through `ConsumerGuard.intake` (decode, check,
   group per topic) next to the decoding loop consumers ran before.

    .venv/bin/python tests/bench/bench_consumer_boundary.py [--events 20000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiokafka.structs import ConsumerRecord
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from arbiter.kit.events import GAME_FINISHED, Topic, topic_named
from arbiter.kit.fields import COMPETITION_ID, EVENT_ID_FIELDS, TEXT_MAX_LENGTH, event_check, id_problem
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import ConsumerGuard, LoggedSetAside
from arbiter_tools.devstack.stack import SERVICE_GROUPS
from arbiter_tools.poison import plausible_event


def walk_problem(message: Message) -> str | None:
    """The generic check: every set field through a function of its kind."""
    for field, value in message.ListFields():
        for item in (value if field.is_repeated else (value,)):
            problem = _check_field(message, field, item)
            if problem is not None:
                return problem
    return None


def _check_field(message: Message, field: FieldDescriptor, value: Any) -> str | None:
    if field.type == FieldDescriptor.TYPE_STRING:
        kind = COMPETITION_ID if field.name == "id" else EVENT_ID_FIELDS.get(field.name)
        if kind is not None:
            return id_problem(value, kind)
        return "text" if "\x00" in value or len(value) > TEXT_MAX_LENGTH else None
    if field.type == FieldDescriptor.TYPE_ENUM:
        return None if value in field.enum_type.values_by_number else "enum"
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.full_name == "google.protobuf.Timestamp":
            return None if -62_135_596_800 <= value.seconds <= 253_402_300_799 else "timestamp"
        return walk_problem(value)
    return None


def per_event(payloads: list[bytes], step: Callable[[bytes], object]) -> float:
    """Microseconds per payload of `step`, the best of three passes."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for payload in payloads:
            step(payload)
        best = min(best, time.perf_counter() - began)
    return best / len(payloads) * 1e6


def record(topic: Topic, offset: int, payload: bytes) -> ConsumerRecord:
    return ConsumerRecord(topic=topic.name, partition=0, offset=offset, timestamp=0, timestamp_type=0, key=b"k",
                          value=payload, checksum=None, serialized_key_size=1, serialized_value_size=len(payload),
                          headers=[])


async def batch_figures(events: int, size: int) -> tuple[float, float]:
    """Milliseconds per batch of `size` game.finished records: the decoding loop of before, and the guard's intake."""
    payloads = [plausible_event(GAME_FINISHED, f"t_{i:012x}-r1-b1-g1").SerializeToString() for i in range(size)]
    records = [record(GAME_FINISHED, offset, payload) for offset, payload in enumerate(payloads)]
    metrics = Metrics("bench")
    guard = ConsumerGuard("bench", metrics, LoggedSetAside(metrics), [GAME_FINISHED], 5, 0.5)
    passes = max(3, events // size)
    before = float("inf")
    after = float("inf")
    for _ in range(passes):
        began = time.perf_counter()
        [GAME_FINISHED.decode(r.value or b"") for r in records]
        before = min(before, time.perf_counter() - began)
        began = time.perf_counter()
        await guard.intake(records)
        after = min(after, time.perf_counter() - began)
    return before * 1000, after * 1000


def main() -> None:
    """Print the figures per consumed topic, then per batch."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000, help="events per topic and step")
    parser.add_argument("--batch", type=int, default=1_000, help="records per batch for the intake figure")
    args = parser.parse_args()
    consumed = sorted({t for groups in SERVICE_GROUPS.values() for topics in groups.values() for t in topics})
    print(f"{args.events} events per topic, every field set; µs per event, best of three passes")
    print(f"  {'topic':24s} {'decode':>8s} {'+ check':>8s} {'+ walk':>8s}")
    for name in consumed:
        topic = topic_named(name)
        payloads = [plausible_event(topic, f"g{i:08d}").SerializeToString() for i in range(args.events)]
        check = event_check(topic.message.DESCRIPTOR, (topic.key_field,))
        decode = per_event(payloads, topic.decode)
        checked = per_event(payloads, lambda payload, check=check, decode=topic.decode: check(decode(payload)))
        walked = per_event(payloads, lambda payload, decode=topic.decode: walk_problem(decode(payload)))
        print(f"  {name:24s} {decode:8.2f} {checked:8.2f} {walked:8.2f}")
    before, after = asyncio.run(batch_figures(args.events, args.batch))
    print(f"a batch of {args.batch} game.finished records: decoding loop {before:.2f} ms,"
          f" ConsumerGuard.intake (decode, check, group) {after:.2f} ms")


if __name__ == "__main__":
    main()
