"""What a play site does about a broker that lost its storage (README.md, "Losing the broker").

The play site publishes straight to Kafka, without an outbox: a broker that comes back empty (the
embedded tansu keeps everything in memory) has lost every event of ours no consumer had read yet,
and Kafka says nothing of it. So, as docs/integration.md advises a play site:

- keep what you published for a while (`PublishedLog`, in the order the broker took it);
- hold on to one event the broker acknowledged in its current life, with its offset (the log's
  *anchor*), and look now and then whether the broker still holds that event at that offset
  (`anchor_held`): a broker that lost its storage holds another event there, or none;
- then publish again everything kept since the anchor (the first event the lost broker took):
  the ids are unchanged, so the consumers drop what they had already applied.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from arbiter.kit.kafka import topic_partitions
from arbiter.kit.outbox import OutboxRecord

# Real seconds one look at the broker may take before it counts as no answer (not as a loss).
ANCHOR_LOOK_SECONDS = 5.0


@dataclass(frozen=True)
class Anchor:
    """One event the broker acknowledged at an offset, and when (monotonic seconds)."""

    partition: TopicPartition
    offset: int
    event_id: str
    published_at: float


class PublishedLog:
    """The events published in the last `keep_seconds` (real), oldest first, and the current broker's anchor."""

    def __init__(self, keep_seconds: float) -> None:
        self.keep_seconds = keep_seconds
        self.anchor: Anchor | None = None
        self._kept: deque[tuple[float, OutboxRecord]] = deque()

    def __len__(self) -> int:
        return len(self._kept)

    def add(self, records: Sequence[OutboxRecord], now: float | None = None) -> None:
        """Keep `records`, acknowledged by the broker at `now` (monotonic), and forget what is too old."""
        now = time.monotonic() if now is None else now
        self._kept.extend((now, record) for record in records)
        while self._kept and self._kept[0][0] < now - self.keep_seconds:
            self._kept.popleft()

    def acknowledged(self, record: OutboxRecord, partition: TopicPartition, offset: int,
                     now: float | None = None) -> None:
        """Keep `record`, which the broker took at `offset` of `partition`: the anchor when there is none yet."""
        now = time.monotonic() if now is None else now
        self.add([record], now)
        if self.anchor is None:
            self.anchor = Anchor(partition, offset, record.event_id, now)

    def lost(self) -> list[OutboxRecord]:
        """The broker lost its log: the records kept since the anchor, taken out to be published (and kept) again.

        The anchor goes: the next event the new broker acknowledges is the next one.
        """
        since = self.anchor.published_at if self.anchor is not None else float("-inf")
        again = [record for at, record in self._kept if at >= since]
        self._kept = deque((at, record) for at, record in self._kept if at < since)
        self.anchor = None
        return again


async def anchor_held(consumer: AIOKafkaConsumer, anchor: Anchor) -> bool | None:
    """Whether the broker still holds the anchor's event at its offset; None when it does not answer.

    `consumer`: started, in no group. A partition or topic that is no more, an empty partition, or
    another event at that offset: the broker lost its log. tansu's high watermark is one past the
    first record of the partition's last batch, so an anchor at or past it is looked for in that batch.
    """
    tp = anchor.partition
    try:
        async with asyncio.timeout(ANCHOR_LOOK_SECONDS):
            if tp.topic not in await consumer.topics():
                return False
            # Assigned first: the consumer's metadata holds only the topics it reads.
            consumer.assign([tp])
            partitions = await topic_partitions(consumer, [tp.topic], patience=ANCHOR_LOOK_SECONDS / 2)
            if not partitions:
                return None
            if tp not in partitions:
                return False
            end = (await consumer.end_offsets([tp]))[tp]
            if end == 0:
                return False
            consumer.seek(tp, min(anchor.offset, end - 1))
            read_some = False
            while True:
                records = (await consumer.getmany(tp, timeout_ms=1000)).get(tp, [])
                if not records:
                    # Read to the end of the log short of the anchor: it ends before it.
                    return False if read_some else None
                read_some = True
                for record in records:
                    if record.offset == anchor.offset:
                        return dict(record.headers).get("event-id", b"").decode() == anchor.event_id
                if records[-1].offset > anchor.offset:
                    return False
    except (KafkaError, TimeoutError, OSError):
        return None
