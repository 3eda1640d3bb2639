"""Trace ids: one id follows a chain of work through calls, events and services, and every log line of it.

A chain starts at a gRPC call (the caller's `x-trace-id` metadata, else a fresh id) or at an
event that carries no trace id (its own event id becomes one). What the chain's work does
keeps the id:
- the work in hand is a `TraceScope` in a context variable, set per call by the gRPC server
  (`arbiter.kit.grpcserver.TraceInterceptor`), per batch of events by the consumers
  (`arbiter.kit.poison.ConsumerGuard`) and per stored timer by `arbiter.kit.timers.TimerPoller`;
- every log record takes the scope's ids when it is made (`arbiter.kit.logs`): `trace_id`, or
  `trace_ids` for a batch of several chains;
- every event stamped in it takes its trace id (`arbiter.kit.events.stamp_meta`, so
  `Outbox.add`) in `EventMeta.trace_id`, which the outbox relay copies to the record's
  `trace-id` header;
- every call to another service carries it in `x-trace-id` (`arbiter.kit.grpcclient`).

The payload, not only the header, holds the id: headers are dropped by some tools and
bridges, while the payload is what the outbox, the set-aside tables and their replays keep.

A batch of events of several chains is one scope of several ids. An event added for it takes
the trace id of the batch's event about the same aggregate (the same record key: a game's
clock state follows that game's move), else it starts a chain of its own (its event id): a
round paired after results of many games belongs to none of them alone. A handler that knows
which event caused which sets the trace id itself (rating: each RatingUpdated its game's), and
writes a line about one event of a batch `with tracing(event.meta.trace_id)`. Work that no call
or event started here (the pairing scheduler, the arena's matchmaker, the clock's flag poller)
has no scope: each event it adds starts a chain.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Final

from google.protobuf.message import DecodeError

from arbiter.contracts.common_pb2 import EventMeta
from arbiter.kit.fields import is_trace_id, trace_id_problem

# The Kafka record header holding an event's trace id (a copy of EventMeta.trace_id).
TRACE_HEADER: Final = "trace-id"
# The gRPC metadata key a caller may send its trace id in, and every answer carries back.
TRACE_METADATA: Final = "x-trace-id"


class TraceScope:
    """The trace ids of the work in hand: one for a call or a timer, one per event for a batch.

    `keys` gives the batch's events' aggregate ids (record keys) in the order of `traces`, asked
    for only when an event is added while the batch holds several chains.
    """

    __slots__ = ("_traces", "_keys", "_ids", "_by_key")

    def __init__(self, traces: Sequence[str], keys: Callable[[], Sequence[str]] | None = None) -> None:
        self._traces = traces
        self._keys = keys
        self._ids: tuple[str, ...] | None = None
        self._by_key: dict[str, str] | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        """The distinct trace ids, in the order of their first event."""
        if self._ids is None:
            self._ids = tuple(dict.fromkeys(self._traces))
        return self._ids

    def single(self) -> str:
        """The one trace id of the work; "" when it holds several chains (or none)."""
        ids = self.ids
        return ids[0] if len(ids) == 1 else ""

    def of_key(self, key: str) -> str:
        """The trace id of the work's (last) event about aggregate `key`; "" when none is about it."""
        single = self.single()
        if single or self._keys is None:
            return single
        if self._by_key is None:
            self._by_key = dict(zip(self._keys(), self._traces, strict=True))
        return self._by_key.get(key, "")


_scope: ContextVar[TraceScope | None] = ContextVar("arbiter_trace_scope", default=None)


def current_scope() -> TraceScope | None:
    """The scope of the work in hand, None outside any call, batch or timer."""
    return _scope.get()


def current_trace_id() -> str:
    """The one trace id of the work in hand; "" outside any, or in a batch of several chains."""
    scope = _scope.get()
    return "" if scope is None else scope.single()


def trace_of_key(key: str) -> str:
    """The trace id the work in hand passes to an event about aggregate `key` ("" when it passes none)."""
    scope = _scope.get()
    return "" if scope is None else scope.of_key(key)


def new_trace_id() -> str:
    """A fresh trace id."""
    return uuid.uuid4().hex


def chain_start(event_id: str) -> str:
    """The trace id of a chain an event starts: its own event id when that can be one, else a fresh id."""
    return event_id if is_trace_id(event_id) else new_trace_id()


def enter(scope: TraceScope | None) -> Token[TraceScope | None]:
    """Make `scope` the work in hand until `leave` is given the token returned."""
    return _scope.set(scope)


def leave(token: Token[TraceScope | None]) -> None:
    """Give back the scope that was in hand before `enter`."""
    _scope.reset(token)


@contextmanager
def tracing(trace_id: str) -> Iterator[None]:
    """Run the block as work of the chain `trace_id` ("" : of none)."""
    token = _scope.set(TraceScope((trace_id,)) if trace_id else None)
    try:
        yield
    finally:
        _scope.reset(token)


def trace_this_task(trace_id: str) -> None:
    """Make `trace_id` the chain of the rest of the current task (a gRPC call's own task)."""
    _scope.set(TraceScope((trace_id,)))


def header_trace(headers: Sequence[tuple[str, bytes | None]] | None) -> str:
    """The usable `trace-id` header of a record; "" when there is none."""
    for key, value in headers or ():
        if key == TRACE_HEADER and value:
            try:
                text = value.decode("ascii")
            except UnicodeDecodeError:
                return ""
            return text if is_trace_id(text) else ""
    return ""


def consumed_trace(event: Any, headers: Sequence[tuple[str, bytes | None]] | None) -> str:
    """The trace id an incoming event is handled in, written to its `meta.trace_id` for the handler.

    Its own `meta.trace_id` when usable, else the record's `trace-id` header when usable, else
    the chain it starts (`chain_start`). A value that is not a trace id is never passed on.
    """
    meta = event.meta
    trace = meta.trace_id
    if trace and is_trace_id(trace):
        return str(trace)
    trace = header_trace(headers) or chain_start(meta.event_id)
    meta.trace_id = trace
    return trace


def payload_trace(payload: bytes) -> str:
    """The trace id in a serialized event's EventMeta (field 1 of every event), "" when it has none.

    Only the meta's bytes are parsed: whole payloads (a round's pairings) cost more.
    """
    if payload[:1] != b"\x0a":
        return ""
    length, shift, position = 0, 0, 1
    while position < len(payload) and shift < 35:
        byte = payload[position]
        length |= (byte & 0x7F) << shift
        position += 1
        if byte < 0x80:
            break
        shift += 7
    else:
        return ""
    if position + length > len(payload):
        return ""
    try:
        trace = EventMeta.FromString(payload[position:position + length]).trace_id
    except DecodeError:
        return ""
    return trace if is_trace_id(trace) else ""


def answer_metadata() -> tuple[tuple[str, str], ...]:
    """The trailing metadata that tells a caller the trace id its call ran in (none outside a call's trace)."""
    trace = current_trace_id()
    return ((TRACE_METADATA, trace),) if trace else ()


def usable_or_new(given: str) -> tuple[str, str | None]:
    """The trace id for a caller's `given` one: it when usable, else a fresh one and why `given` was not used."""
    if not given:
        return new_trace_id(), None
    if is_trace_id(given):
        return given, None
    return new_trace_id(), trace_id_problem(given)
