"""Poison records never block a consumer: what cannot be handled is set aside, and the partition moves on.

Every record a consumer fetches passes its boundary first (`ConsumerGuard.intake`): one that
does not parse as its topic's message is set aside at once as "undecodable", one whose fields
break the kit's field rules (`arbiter.kit.fields.event_problem`: NUL characters, id rules and
lengths, enum values, timestamps) as "invalid". The handler then only ever sees valid events.

A handler that raises (`ConsumerGuard.run`) is told apart by what it raised:
- an outage (PostgreSQL, Redis, the broker or a service unreachable, a deadlock, `is_transient`)
  is waited out as before: the batch is delivered again, however long the outage lasts, and
  nothing is set aside for it;
- anything else is retried `max_attempts` times with pauses doubling from `backoff_seconds`.
  If it still fails, the batch is handed over again in halves, each half once, down to single
  events: the halves that succeed are done (handlers are idempotent), and each single event that
  still fails is set aside as "handler_failed" with the number of attempts it took part in.
  The normal path costs nothing more than one handler call per batch.

Setting aside is idempotent (one row per consumer group, topic, partition and offset), and a
record is set aside before the offsets are committed, so a consumer killed at any moment loses
nothing: the records since the last commit come again and are set aside or handled again.
Records set aside are listed and published again by `arbiter set-aside`.

Every handler call runs in the trace scope of its events (`arbiter.kit.trace`): each event's
trace id is its meta's, else its record's `trace-id` header, else its own event id, and is
written to its `meta.trace_id` for the handler. Halves and single events get their own scope,
so a line about an event set aside names its trace. A record keeps its bytes and headers when
set aside, so a replay carries the trace id it came with.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import asyncpg
import grpc
import redis.exceptions as redis_errors
from aiokafka.errors import KafkaError, KafkaTimeoutError
from google.protobuf.message import DecodeError, Message

from arbiter.kit.errors import RetryLater
from arbiter.kit.events import Topic
from arbiter.kit.fields import EventCheck, event_check, shown
from arbiter.kit.metrics import Metrics, combinations, precreate
from arbiter.kit.trace import TraceScope, consumed_trace, enter, header_trace, leave

log = logging.getLogger(__name__)

UNDECODABLE: Final = "undecodable"
INVALID: Final = "invalid"
HANDLER_FAILED: Final = "handler_failed"
# The `reason` label of arbiter_events_set_aside_total, and of the table's rows.
REASONS: Final = (UNDECODABLE, INVALID, HANDLER_FAILED)
# After an outage the batch comes again after this pause: waited for, not counted as an attempt.
OUTAGE_PAUSE_SECONDS: Final = 0.5
# No pause between two attempts is longer than this, whatever the doubling reaches.
MAX_PAUSE_SECONDS: Final = 10.0
# Longest text of a problem or an error kept with a record set aside.
_DETAIL_LENGTH: Final = 2000

BatchHandler = Callable[[list[Message]], Awaitable["str | None"]]


def attempt_pause(backoff_seconds: float, failures: int) -> float:
    """The pause after the `failures`-th failed attempt: `backoff_seconds`, doubling, at most MAX_PAUSE_SECONDS."""
    return min(backoff_seconds * 2 ** (failures - 1), MAX_PAUSE_SECONDS)


def retry_seconds(max_attempts: int, backoff_seconds: float) -> float:
    """How long a batch's attempts pause in all before its records are looked at one by one."""
    return sum(attempt_pause(backoff_seconds, failures) for failures in range(1, max_attempts))


def is_transient(error: BaseException) -> bool:
    """Whether `error` says something the consumer needs is unavailable for now, rather than that the event is bad.

    Such a failure is retried for as long as it lasts and never sets anything aside: an outage of
    PostgreSQL, Redis or the broker must not empty a topic into the set-aside table.
    """
    if isinstance(error, (OSError, TimeoutError, asyncio.TimeoutError, RetryLater)):
        return True
    if isinstance(error, (asyncpg.PostgresConnectionError, asyncpg.exceptions.InsufficientResourcesError,
                          asyncpg.exceptions.TransactionRollbackError, asyncpg.exceptions.AdminShutdownError,
                          asyncpg.exceptions.CrashShutdownError, asyncpg.exceptions.CannotConnectNowError)):
        return True
    # Only the pool's and a closed connection's own errors: its subclasses (DataError: an argument
    # that cannot be sent) fail the same way every time.
    if type(error) is asyncpg.InterfaceError:
        return True
    if isinstance(error, (redis_errors.ConnectionError, redis_errors.TimeoutError, redis_errors.TryAgainError,
                          redis_errors.ClusterDownError, redis_errors.ReadOnlyError, redis_errors.OutOfMemoryError)):
        return True
    if isinstance(error, KafkaError):
        return bool(error.retriable) or isinstance(error, KafkaTimeoutError)
    if isinstance(error, grpc.aio.AioRpcError):
        return error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    return False


def clean_detail(text: str) -> str:
    """A problem or error as stored and logged: no NUL (PostgreSQL text cannot hold it), cut to a readable length."""
    text = text.replace("\x00", "\\x00")
    return text if len(text) <= _DETAIL_LENGTH else text[:_DETAIL_LENGTH] + f"… ({len(text):,} characters)"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record a consumer cannot handle, why, and how many attempts it took part in."""

    record: Any  # aiokafka's ConsumerRecord
    reason: str
    detail: str
    attempts: int


class SetAside(ABC):
    """Where a consumer puts the records it cannot handle, counted in arbiter_events_set_aside_total."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def expect(self, topics: Iterable[str]) -> None:
        """Create the metric's series at zero for `topics`: an alert sees the first record set aside."""
        precreate(self.metrics.events_set_aside, self.metrics.service, combinations(topics, REASONS))

    async def put(self, group: str, rejected: Sequence[Rejected]) -> int:
        """Set `rejected` aside for consumer group `group`; return how many were not set aside before."""
        fresh = await self._keep(group, rejected)
        service = self.metrics.service
        for item in fresh:
            record = item.record
            self.metrics.events_set_aside.labels(service, record.topic, item.reason).inc()
            facts = {"group": group, "topic": record.topic, "partition": record.partition, "offset": record.offset,
                     "key": shown(_text(record.key)), "reason": item.reason, "detail": item.detail,
                     "attempts": item.attempts}
            # A record that never reached a handler has no scope: its header names its chain, if anything does.
            trace = header_trace(record.headers) if item.attempts == 0 else ""
            if trace:
                facts["trace_id"] = trace
            log.error("record set aside; `arbiter set-aside list` shows it, `arbiter set-aside replay` sends it again",
                      extra=facts)
        return len(fresh)

    @abstractmethod
    async def _keep(self, group: str, rejected: Sequence[Rejected]) -> list[Rejected]:
        """Keep `rejected`; return those kept now (not already kept by an earlier delivery)."""


class StoredSetAside(SetAside):
    """The service schema's `consumer_set_aside` table (kit migration 003)."""

    def __init__(self, pool: asyncpg.Pool, metrics: Metrics) -> None:
        super().__init__(metrics)
        self.pool = pool

    async def _keep(self, group: str, rejected: Sequence[Rejected]) -> list[Rejected]:
        records = [item.record for item in rejected]
        # Header keys and values are kept as base64: a header may hold anything, NUL included,
        # and a record that cannot be set aside would hold its partition like a poison event.
        rows = await self.pool.fetch(
            "INSERT INTO consumer_set_aside (consumer_group, topic, partition, \"offset\", key, value, headers,"
            " record_time, reason, detail, attempts)"
            " SELECT $1, r.topic, r.partition, r.record_offset, r.key, r.value, r.headers::jsonb, r.record_time,"
            " r.reason, r.detail, r.attempts FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bytea[],"
            " $6::bytea[], $7::text[], $8::timestamptz[], $9::text[], $10::text[], $11::int[])"
            " AS r(topic, partition, record_offset, key, value, headers, record_time, reason, detail, attempts)"
            " ON CONFLICT (consumer_group, topic, partition, \"offset\") DO NOTHING RETURNING partition, \"offset\","
            " topic",
            group, [r.topic for r in records], [r.partition for r in records], [r.offset for r in records],
            [r.key for r in records], [r.value for r in records],
            [json.dumps(encode_headers(r.headers)) for r in records],
            [_instant(r.timestamp) for r in records], [item.reason for item in rejected],
            [clean_detail(item.detail) for item in rejected], [item.attempts for item in rejected],
        )
        inserted = {(row["topic"], row["partition"], row["offset"]) for row in rows}
        return [item for item in rejected
                if (item.record.topic, item.record.partition, item.record.offset) in inserted]


class LoggedSetAside(SetAside):
    """For a process without a database of its own (the play-site simulator): logged and counted only."""

    async def _keep(self, group: str, rejected: Sequence[Rejected]) -> list[Rejected]:
        return list(rejected)


def encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> list[dict[str, str | None]]:
    """Record headers as stored: key and value in base64 (a value may be null)."""
    return [{"key": base64.b64encode(key.encode()).decode(),
             "value": None if value is None else base64.b64encode(value).decode()} for key, value in headers]


def decode_headers(stored: Sequence[dict[str, str | None]]) -> list[tuple[str, bytes | None]]:
    """The headers `encode_headers` stored, as a producer sends them."""
    return [(base64.b64decode(item["key"] or "").decode(errors="replace"),
             None if item["value"] is None else base64.b64decode(item["value"])) for item in stored]


def _instant(timestamp_ms: int | None) -> datetime | None:
    if timestamp_ms is None or timestamp_ms < 0:
        return None
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)


def _text(key: bytes | None) -> str:
    return "" if key is None else key.decode(errors="replace")


@dataclass
class Accepted:
    """The records of one topic that passed the boundary, their events and the events' trace ids, in fetch order."""

    records: list[Any] = field(default_factory=list)
    events: list[Message] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)


class ConsumerNews(Protocol):
    """Told whether a consumer keeps up: decisions taken on the absence of news read it (kit.contact)."""

    def stalled(self, consumer: str) -> None:
        """`consumer` failed a batch for an outage; it will come again."""

    def handled(self, consumer: str) -> None:
        """`consumer` handled a batch."""


class ConsumerGuard:
    """One consumer group's boundary and attempts: see the module's docstring."""

    def __init__(self, group: str, metrics: Metrics, set_aside: SetAside, topics: Sequence[Topic],
                 max_attempts: int, backoff_seconds: float, news: ConsumerNews | None = None) -> None:
        if max_attempts < 1:
            raise ValueError("a consumer needs at least one attempt per batch")
        self.news = news
        self.group = group
        self.metrics = metrics
        self.set_aside = set_aside
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self._topics: dict[str, tuple[Topic, EventCheck]] = {
            topic.name: (topic, event_check(topic.message.DESCRIPTOR, (topic.key_field,))) for topic in topics}
        set_aside.expect(self._topics)

    async def intake(self, records: Sequence[Any]) -> dict[str, Accepted]:
        """Decode and check `records`, set aside those that fail; the rest per topic, in order of first record."""
        accepted: dict[str, Accepted] = {}
        rejected: list[Rejected] = []
        for record in records:
            topic, check = self._topics[record.topic]
            try:
                event = topic.decode(record.value or b"")
            except DecodeError as error:
                rejected.append(Rejected(record, UNDECODABLE, f"not a {topic.message.DESCRIPTOR.name}: {error}", 0))
                continue
            problem = check(event)
            if problem is not None:
                rejected.append(Rejected(record, INVALID, problem, 0))
                continue
            batch = accepted.get(record.topic)
            if batch is None:
                batch = accepted[record.topic] = Accepted()
            batch.records.append(record)
            batch.events.append(event)
            batch.traces.append(consumed_trace(event, record.headers))
        if rejected:
            await self.set_aside.put(self.group, rejected)
            for item in rejected:
                self.metrics.events_consumed.labels(self.metrics.service, item.record.topic, "set_aside").inc()
        return accepted

    async def run(self, topic: str, handler: BatchHandler, accepted: Accepted) -> None:
        """Hand `accepted` to `handler` with bounded attempts; set aside each event that keeps failing."""
        await self._attempt(topic, handler, accepted.records, accepted.events, accepted.traces, 0, self.max_attempts)

    async def _attempt(self, topic: str, handler: BatchHandler, records: list[Any], events: list[Message],
                       traces: list[str], earlier: int, attempts: int) -> None:
        key_of = self._topics[topic][0].key_of
        token = enter(TraceScope(traces, lambda: [key_of(event) for event in events]))
        try:
            await self._attempt_in_scope(topic, handler, records, events, traces, earlier, attempts)
        finally:
            leave(token)

    async def _attempt_in_scope(self, topic: str, handler: BatchHandler, records: list[Any], events: list[Message],
                                traces: list[str], earlier: int, attempts: int) -> None:
        service = self.metrics.service
        failures = 0
        while True:
            started = time.perf_counter()
            try:
                outcome = await handler(events) or "handled"
            except Exception as error:
                self.metrics.events_consumed.labels(service, topic, "error").inc(len(events))
                if is_transient(error):
                    if self.news is not None:
                        self.news.stalled(self.group)
                    log.exception("handler failed for want of something it needs; the events will be delivered"
                                  " again", extra={"topic": topic, "group": self.group})
                    await asyncio.sleep(OUTAGE_PAUSE_SECONDS)
                    raise
                failures += 1
                failure = error
                if failures >= attempts:
                    break
                pause = attempt_pause(self.backoff_seconds, failures)
                log.exception("handler failed; trying again", extra={
                    "topic": topic, "group": self.group, "attempt": earlier + failures, "events": len(events),
                    "pause_seconds": pause})
                await asyncio.sleep(pause)
                continue
            took = time.perf_counter() - started
            if self.news is not None:
                self.news.handled(self.group)
            self.metrics.handler_latency.labels(service, topic).observe(took)
            self.metrics.events_consumed.labels(service, topic, outcome).inc(len(events))
            if log.isEnabledFor(logging.DEBUG):  # at LOG_LEVEL=DEBUG a trace shows each batch that handled its events
                log.debug("events handled", extra={"topic": topic, "group": self.group, "events": len(events),
                                                   "outcome": outcome, "seconds": round(took, 6)})
            return
        tried = earlier + failures
        if len(events) == 1:
            detail = f"{type(failure).__name__}: {failure}"
            await self.set_aside.put(self.group, [Rejected(records[0], HANDLER_FAILED, detail, tried)])
            self.metrics.events_consumed.labels(service, topic, "set_aside").inc()
            return
        log.error("handler failed on every attempt; the batch is handed over in halves to find the events that fail",
                  exc_info=failure, extra={"topic": topic, "group": self.group, "events": len(events),
                                           "attempts": tried})
        middle = len(events) // 2
        await self._attempt(topic, handler, records[:middle], events[:middle], traces[:middle], tried, 1)
        await self._attempt(topic, handler, records[middle:], events[middle:], traces[middle:], tried, 1)
