"""Transactional outbox: events are saved with the state change, then relayed to Kafka."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg
from aiokafka.errors import KafkaError
from google.protobuf.message import Message

from arbiter.kit.db import Connection, fetch_one
from arbiter.kit.events import event_type_of, stamp_meta, timestamp, topic_of
from arbiter.kit.metrics import Metrics
from arbiter.kit.pause import pause
from arbiter.kit.settings import BROKER_MAX_MESSAGE_BYTES
from arbiter.kit.timesource import TimeSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OutboxRecord:
    """One saved event waiting to be published."""

    id: int
    topic: str
    key: str
    payload: bytes
    event_id: str
    event_type: str
    # The payload's EventMeta.trace_id, kept beside it for the `trace-id` header ("": read the payload).
    trace_id: str = ""


Publisher = Callable[[Sequence[OutboxRecord]], Awaitable[None]]


class UnpublishableEvent(Exception):
    """An event Kafka can never take as it is: publishing it again would fail the same way."""

    def __init__(self, record: OutboxRecord, reason: str) -> None:
        super().__init__(f"event {record.event_id} on {record.topic} cannot be published: {reason}")
        self.record = record
        self.reason = reason


def record_of(event: Message) -> OutboxRecord:
    """A stamped event as a record for a batch publisher, never stored (id 0)."""
    topic = topic_of(event)
    meta = event.meta  # type: ignore[attr-defined]  # every event has an EventMeta
    return OutboxRecord(id=0, topic=topic.name, key=topic.key_of(event), payload=event.SerializeToString(),
                        event_id=meta.event_id, event_type=event_type_of(event), trace_id=meta.trace_id)
# Above this many events in one add, COPY (two round trips, cheap per row) beats one INSERT.
_COPY_FROM_ROWS = 64


class Outbox:
    """Adds events to the outbox table inside the caller's transaction."""

    def __init__(self, producer: str, time_source: TimeSource,
                 max_message_bytes: int = BROKER_MAX_MESSAGE_BYTES) -> None:
        self.producer = producer
        self.time_source = time_source
        # The broker's limit (KAFKA_MAX_MESSAGE_BYTES): an event that can grow without bound must be
        # cut to fit it, or the relay sets it aside (UnpublishableEvent).
        self.max_message_bytes = max_message_bytes

    async def add(self, connection: Connection, *events: Message, causation_id: str = "",
                  trace_id: str = "") -> None:
        """Save `events` (meta stamped) in the transaction `connection` is in.

        Each keeps the trace id set in its meta, else takes `trace_id`, else the work in hand's
        (`stamp_meta`); the relay sends it in the `trace-id` header.
        """
        rows = []
        # One instant for the whole call, which commits as one, read and converted once: a clock read
        # and a Timestamp conversion per event showed in pairing's CPU when a whole round finishes at
        # once (tests/bench/bench_round_save.py).
        now = timestamp(self.time_source.now())
        for event in events:
            topic = topic_of(event)
            stamp_meta(event, self.producer, now, causation_id, trace_id)
            meta = event.meta  # type: ignore[attr-defined]  # every event has an EventMeta
            rows.append((
                topic.name, topic.key_of(event), event.SerializeToString(), meta.event_id, event_type_of(event),
                meta.trace_id,
            ))
        if len(rows) > _COPY_FROM_ROWS:
            # One COPY for the whole batch: a round of 2,500 games must not cost 2,500 round trips,
            # and COPY encodes rows far cheaper than array parameters. Ids follow the row order;
            # the statement-level NOTIFY trigger fires for COPY as for INSERT.
            await connection.copy_records_to_table(
                "outbox", records=rows, columns=["topic", "key", "payload", "event_id", "event_type", "trace_id"],
            )
        elif rows:
            # A few events: COPY takes two round trips (start, then data), one INSERT takes one.
            await connection.execute(
                "INSERT INTO outbox (topic, key, payload, event_id, event_type, trace_id)"
                " SELECT r.topic, r.key, r.payload, r.event_id, r.event_type, r.trace_id"
                " FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[])"
                " WITH ORDINALITY AS r(topic, key, payload, event_id, event_type, trace_id, position)"
                " ORDER BY position",
                *(list(column) for column in zip(*rows, strict=True)),
            )


_DELETE_PUBLISHED = "DELETE FROM outbox WHERE id = ANY($1::bigint[])"
_MOVE_PUBLISHED = (
    "WITH done AS (DELETE FROM outbox WHERE id = ANY($1::bigint[])"
    " RETURNING id, topic, key, payload, event_id, event_type, trace_id, created_at)"
    " INSERT INTO outbox_published (id, topic, key, payload, event_id, event_type, trace_id, created_at)"
    " SELECT id, topic, key, payload, event_id, event_type, trace_id, created_at FROM done"
)


async def republish(connection: asyncpg.Connection, since: datetime) -> Counter[str]:
    """Put the events published from this schema's outbox since `since` back in it, in their order; count them by topic.

    For a broker that lost what it held: the relay publishes them again, and consumers, which
    deduplicate on the event id, apply only those they had not. Their rows leave `outbox_published`
    (the relay puts them back once they are out again).
    """
    rows = await connection.fetch(
        "WITH taken AS (DELETE FROM outbox_published WHERE published_at >= $1"
        " RETURNING id, topic, key, payload, event_id, event_type, trace_id),"
        " put AS (INSERT INTO outbox (topic, key, payload, event_id, event_type, trace_id)"
        " SELECT topic, key, payload, event_id, event_type, trace_id FROM taken ORDER BY id RETURNING topic)"
        " SELECT topic, count(*) AS events FROM put GROUP BY topic",
        since,
    )
    return Counter({row["topic"]: row["events"] for row in rows})


class OutboxRelay:
    """Publishes saved events in order and moves them to `outbox_published` once Kafka has acknowledged them.

    Published events are kept there (`keep_published`; the retention sweep deletes them after
    OUTBOX_KEEP_PUBLISHED_HOURS) so that `republish` can send them again after a broker lost them.

    A crash between publish and delete publishes again on restart: delivery is
    at-least-once and consumers deduplicate on the event id. One relay per schema runs at a
    time, the one holding the schema's advisory lock: that keeps the per-key order of the
    table on Kafka. An event Kafka can never take is moved to `outbox_set_aside`, counted and
    logged: retried forever it would hold back every event saved after it.
    """

    def __init__(
        self, pool: asyncpg.Pool, schema: str, publish: Publisher, metrics: Metrics,
        batch_size: int = 1000, poll_seconds: float = 0.5, keep_published: bool = True,
    ) -> None:
        self.pool = pool
        self._done_statement = _MOVE_PUBLISHED if keep_published else _DELETE_PUBLISHED
        self.schema = schema
        self.publish = publish
        self.metrics = metrics
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self._wake = asyncio.Event()
        self._lock_key = f"arbiter-outbox:{schema}"

    async def relay_once(self) -> int:
        """Publish one batch unless another relay of the schema is running; return how many events went out."""
        async with self.pool.acquire() as connection:
            if not await self._try_lock(connection):
                return 0
            try:
                return await self._relay_batch(connection)
            finally:
                try:
                    await self._unlock(connection)
                except BaseException:
                    connection.terminate()  # kept by the pool, it would keep the lock (see _serve)
                    raise

    async def run(self, stop: asyncio.Event) -> None:
        """Relay until `stop` is set, woken by NOTIFY on insert or by polling; reconnect after a failure."""
        while not stop.is_set():
            try:
                async with self.pool.acquire() as connection:
                    await self._serve(connection, stop)
            # A broker that is down or refuses a record (KafkaError) is waited for like a database: the
            # events stay in the outbox, and the service keeps serving meanwhile.
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError, KafkaError) as error:
                self.metrics.errors.labels(self.metrics.service, "outbox_relay").inc()
                log.warning("outbox relay failed, retrying", extra={"error": repr(error)})
                await pause(stop, self.poll_seconds)

    async def _serve(self, connection: Connection, stop: asyncio.Event) -> None:
        """Listen and relay on one connection, which holds the schema's lock once it gets it.

        Holding the lock for as long as the connection lives saves each pass its BEGIN, lock and
        COMMIT round trips (a fifth of the relay's work). If the connection dies the lock goes
        with it, and so do this relay's statements: it never deletes what another relay owns.
        """
        channel = f"{self.schema}_outbox"
        await connection.add_listener(channel, self._notified)
        holding = False
        try:
            while not stop.is_set():
                # Cleared before reading, not after: a NOTIFY that lands while a batch is being
                # published must wake the next pass at once instead of waiting for the poll.
                self._wake.clear()
                if not holding:
                    holding = await self._try_lock_and_gauge(connection)
                if holding and await self._relay_batch(connection) == self.batch_size:
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
        finally:
            try:
                await connection.remove_listener(channel, self._notified)
                if holding:
                    await self._unlock(connection)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncio.CancelledError) as error:
                # The pool keeps sessions as they are (no reset): a connection that may still hold the
                # lock is closed, which frees it, rather than handed back to keep every relay out.
                log.debug("outbox relay cleanup failed", extra={"error": repr(error)})
                connection.terminate()
                if isinstance(error, asyncio.CancelledError):
                    raise

    async def _try_lock_and_gauge(self, connection: Connection) -> bool:
        """Try the schema's lock; a replica that does not get it still tells how many events wait.

        The count is an estimate from the ids at both ends of the table (an index lookup each, not a
        scan): ids a rolled-back transaction took count too.
        """
        holding, pending = await fetch_one(
            connection,
            "SELECT pg_try_advisory_lock(hashtext($1)), (SELECT coalesce(max(id) - min(id) + 1, 0) FROM outbox)",
            self._lock_key,
        )
        if not holding:
            self.metrics.outbox_pending.labels(self.metrics.service).set(pending)
        return bool(holding)

    async def _try_lock(self, connection: Connection) -> bool:
        return bool(await connection.fetchval("SELECT pg_try_advisory_lock(hashtext($1))", self._lock_key))

    async def _unlock(self, connection: Connection) -> None:
        await connection.execute("SELECT pg_advisory_unlock(hashtext($1))", self._lock_key)

    async def _relay_batch(self, connection: Connection) -> int:
        """Publish the oldest saved events and delete them; `connection` holds the schema's lock."""
        pending = self.metrics.outbox_pending.labels(self.metrics.service)
        while True:
            rows = await connection.fetch(
                "SELECT id, topic, key, payload, event_id, event_type, trace_id FROM outbox ORDER BY id LIMIT $1",
                self.batch_size,
            )
            if not rows:
                pending.set(0)
                return 0
            # Positional, in the SELECT's (and the dataclass's) column order: a dict per row cost more than the rest.
            records = [OutboxRecord(*row) for row in rows]
            # At least these wait: a broker that refuses or hangs must not leave the gauge at its last 0.
            pending.set(len(records))
            try:
                await self.publish(records)
                break
            except UnpublishableEvent as unpublishable:
                # The events of the batch before it may be out already: read again, they go out again
                # (at-least-once), and in their order.
                await self._set_aside(connection, unpublishable)
        await connection.execute(self._done_statement, [r.id for r in records])
        if len(records) < self.batch_size:
            pending.set(0)
        else:
            # A backlog: what is left, estimated from the last id (one index lookup, only when behind).
            last = await connection.fetchval("SELECT max(id) FROM outbox")
            pending.set(0 if last is None else last - records[-1].id)
        for topic, count in Counter(record.topic for record in records).items():
            self.metrics.events_published.labels(self.metrics.service, topic).inc(count)
        return len(records)

    async def _set_aside(self, connection: Connection, unpublishable: UnpublishableEvent) -> None:
        """Move the event out of the outbox, with the reason, in one statement."""
        record = unpublishable.record
        await connection.execute(
            "WITH taken AS (DELETE FROM outbox WHERE id = $1"
            " RETURNING id, topic, key, payload, event_id, event_type, created_at)"
            " INSERT INTO outbox_set_aside (id, topic, key, payload, event_id, event_type, created_at, reason)"
            " SELECT id, topic, key, payload, event_id, event_type, created_at, $2 FROM taken",
            record.id, unpublishable.reason,
        )
        self.metrics.outbox_set_aside.labels(self.metrics.service, record.topic).inc()
        log.error("event set aside: Kafka cannot take it (deploy/README.md: sending set-aside events again)",
                  extra={"event_id": record.event_id, "topic": record.topic, "outbox_id": record.id,
                         "reason": unpublishable.reason})

    def _notified(self, *_: object) -> None:
        self._wake.set()
