"""Hypothesis strategies that build any protobuf message from its descriptor (for gRPC fuzzing).

Three strategies, all driven by `message.DESCRIPTOR` only, so a new field or RPC is covered
without touching this module:

* `any_message(cls)`: wild requests. Every scalar type with its edge values (empty, NUL,
  very long and non-Latin strings; int32/int64/uint64 limits; NaN and infinities), enums
  including unknown numbers, nested messages to a depth bound, bounded repeated fields,
  oneofs (one member or none), proto3 `optional`, and google.protobuf.Timestamp with
  values outside the representable range.
* `almost_valid(cls, pool)`: requests that look real, so the fuzzer gets past the first
  validation: ids drawn from those the services handed out earlier (`IdPool.harvest` reads
  every response), known variants, defined enum values, plausible numbers and times; now
  and then one field is swapped for a wild value.
* `refusable(cls, pool)`: an almost valid request with one deliberate defect (an unknown
  id, a cleared field, a junk string, an out-of-range number): what a service should refuse
  without changing anything.

And fixed lists, cheap to send and easy to read when one fails:

* `edge_messages(cls)`: every field at once (nested ones included) empty, NUL, huge,
  maximal or minimal.
* `plausible_request(cls, pool)` / `fresh_plausible_request`: one entirely plausible request
  built without randomness (a new acting player and request id for the fresh one).
* `field_edge_messages(cls, pool)`: the plausible request with one field at a time at an
  extreme (NUL or huge string, integer limits, unknown enum, NaN, extreme time), so the
  extreme reaches the code behind validation of the other fields.

FUZZ_NO_NUL=1 leaves NUL characters out of every string.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

from arbiter.draughts.variants import Variant

# ---------------------------------------------------------------------------
# Scalars
# ---------------------------------------------------------------------------

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT32 = (0, 2**32 - 1)
UINT64 = (0, 2**64 - 1)

# Timestamp.seconds of 0001-01-01 and 9999-12-31T23:59:59 (the range Timestamp allows).
TS_MIN_SECONDS = -62_135_596_800
TS_MAX_SECONDS = 253_402_300_799

# FUZZ_NO_NUL=1 leaves NUL characters out of strings, to look past a service's failure on
# them while it is being fixed (PostgreSQL text cannot hold NUL).
ALLOW_NUL = os.environ.get("FUZZ_NO_NUL", "") != "1"
_NO_CHARS = "" if ALLOW_NUL else "\x00"

# Valid UTF-8 only (a lone surrogate cannot be serialized by the client at all).
_TEXT_CHARS = st.characters(exclude_categories=("Cs",), exclude_characters=_NO_CHARS)

_EDGE_STRINGS: tuple[str, ...] = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\t\n\r",
    "x" * 10_000,
    "é" * 3_000,
    "🂡" * 1_000,
    "\u202e\u200b\ufeff",
    "'; DROP TABLE tournaments; --",
    "%s%s%n{0}{}",
    "../../../etc/passwd",
    "null",
    "-1",
    "NaN",
    "1e309",
    "ÅNGSTRÖM",
    "İ",
    "ß",
)
EDGE_STRINGS = tuple(text for text in _EDGE_STRINGS if ALLOW_NUL or "\x00" not in text)

_HEX = "0123456789abcdef"


def _ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    low, high = bounds
    edges = sorted({low, low + 1, -1 if low < 0 else 0, 0, 1, 2, high - 1, high})
    return st.one_of(st.sampled_from(edges), st.integers(low, high), st.integers(-1000, 1000).filter(
        lambda v: low <= v <= high))


def wild_string(max_size: int = 60) -> st.SearchStrategy[str]:
    """Edge strings, arbitrary unicode and ASCII junk."""
    return st.one_of(
        st.sampled_from(EDGE_STRINGS),
        st.text(_TEXT_CHARS, max_size=max_size),
        st.text(st.characters(min_codepoint=0, max_codepoint=127, exclude_characters=_NO_CHARS), max_size=max_size),
    )


def wild_scalar(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Any value of the field's scalar type, edges included."""
    t = fd.type
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return _ints(INT32)
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return _ints(INT64)
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return _ints(UINT32)
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return _ints(UINT64)
    if t == FieldDescriptor.TYPE_DOUBLE:
        return st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324]),
                         st.floats(allow_nan=True, allow_infinity=True))
    if t == FieldDescriptor.TYPE_FLOAT:
        return st.floats(width=32, allow_nan=True, allow_infinity=True)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_STRING:
        return wild_string()
    if t == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.binary(max_size=64), st.just(b"\x00" * 5000))  # bytes may hold NUL
    if t == FieldDescriptor.TYPE_ENUM:
        return wild_enum(fd)
    raise TypeError(f"not a scalar field: {fd.full_name}")


def wild_enum(fd: FieldDescriptor) -> st.SearchStrategy[int]:
    """Defined numbers and unknown ones (proto3 enums are open)."""
    known = [v.number for v in fd.enum_type.values]
    unknown = st.one_of(st.sampled_from([max(known) + 1, -1, 999, INT32[0], INT32[1]]), st.integers(*INT32))
    return st.one_of(st.sampled_from(known), unknown)


def wild_timestamp() -> st.SearchStrategy[tuple[int, int]]:
    """(seconds, nanos): extreme, out of range, and ordinary."""
    now = int(time.time())
    return st.tuples(
        st.one_of(
            st.sampled_from([0, -1, TS_MIN_SECONDS, TS_MIN_SECONDS - 1, TS_MAX_SECONDS, TS_MAX_SECONDS + 1,
                             INT64[0], INT64[1], now, now + 86_400 * 365 * 100]),
            st.integers(*INT64),
            st.integers(now - 10**7, now + 10**7),
        ),
        st.one_of(st.sampled_from([0, 999_999_999, 1_000_000_000, -1, INT32[0], INT32[1]]), st.integers(*INT32)),
    )


# ---------------------------------------------------------------------------
# Building a message from a dict of drawn values
# ---------------------------------------------------------------------------

TIMESTAMP = "google.protobuf.Timestamp"


def message_class(descriptor: Descriptor) -> type[Message]:
    """The generated class of a descriptor."""
    return message_factory.GetMessageClass(descriptor)


def _is_map(fd: FieldDescriptor) -> bool:
    return fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry


def _real_oneofs(descriptor: Descriptor) -> list[Any]:
    """Oneofs written in the proto (not the synthetic ones of proto3 `optional`)."""
    return [o for o in descriptor.oneofs if not (len(o.fields) == 1 and o.name == "_" + o.fields[0].name)]


def _assign(msg: Message, fd: FieldDescriptor, value: Any) -> None:
    if _is_map(fd):
        target = getattr(msg, fd.name)
        value_fd = fd.message_type.fields_by_name["value"]
        for k, v in value.items():
            if value_fd.type == FieldDescriptor.TYPE_MESSAGE:
                target[k].CopyFrom(v)
            else:
                target[k] = v
    elif fd.is_repeated:
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            container = getattr(msg, fd.name)
            for item in value:
                container.add().CopyFrom(item)
        else:
            getattr(msg, fd.name).extend(value)
    elif fd.type == FieldDescriptor.TYPE_MESSAGE:
        getattr(msg, fd.name).CopyFrom(value)
    else:
        setattr(msg, fd.name, value)


def _build(cls: type[Message], values: dict[str, Any]) -> Message:
    msg = cls()
    for name, value in values.items():
        if value is not None:
            _assign(msg, cls.DESCRIPTOR.fields_by_name[name], value)
    return msg


def _timestamp_message(pair: tuple[int, int]) -> Message:
    from google.protobuf.timestamp_pb2 import Timestamp

    seconds, nanos = pair
    return Timestamp(seconds=seconds, nanos=nanos)


# ---------------------------------------------------------------------------
# Wild messages
# ---------------------------------------------------------------------------


def any_message(
    cls: type[Message] | Descriptor, *, max_depth: int = 3, max_repeated: int = 4,
) -> st.SearchStrategy[Message]:
    """Any message of this type, from its descriptor (see the module docstring)."""
    descriptor = cls if isinstance(cls, Descriptor) else cls.DESCRIPTOR
    return _wild_message(descriptor, max_depth, max_repeated)


def _wild_message(descriptor: Descriptor, depth: int, max_repeated: int) -> st.SearchStrategy[Message]:
    cls = message_class(descriptor)
    if descriptor.full_name == TIMESTAMP:
        return wild_timestamp().map(_timestamp_message)
    if depth <= 0:
        return st.just(cls())
    in_oneof = {f.name for o in _real_oneofs(descriptor) for f in o.fields}
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for fd in descriptor.fields:
        if fd.name in in_oneof:
            continue
        parts[fd.name] = st.one_of(st.none(), _wild_field(fd, depth, max_repeated))
    oneofs = [
        st.one_of(st.none(), *[st.tuples(st.just(f.name), _wild_field(f, depth, max_repeated)) for f in o.fields])
        for o in _real_oneofs(descriptor)
    ]

    def build(args: tuple[dict[str, Any], list[tuple[str, Any] | None]]) -> Message:
        values, chosen = args
        values = dict(values)
        for pick in chosen:
            if pick is not None:
                values[pick[0]] = pick[1]
        return _build(cls, values)

    return st.tuples(st.fixed_dictionaries(parts), st.tuples(*oneofs).map(list)).map(build)


def _wild_field(fd: FieldDescriptor, depth: int, max_repeated: int) -> st.SearchStrategy[Any]:
    if _is_map(fd):
        key_fd = fd.message_type.fields_by_name["key"]
        value_fd = fd.message_type.fields_by_name["value"]
        return st.dictionaries(_wild_single(key_fd, depth - 1, max_repeated),
                               _wild_single(value_fd, depth - 1, max_repeated), max_size=max_repeated)
    single = _wild_single(fd, depth, max_repeated)
    if fd.is_repeated:
        return st.lists(single, max_size=max_repeated)
    return single


def _wild_single(fd: FieldDescriptor, depth: int, max_repeated: int) -> st.SearchStrategy[Any]:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return st.deferred(lambda: _wild_message(fd.message_type, depth - 1, max_repeated))
    return wild_scalar(fd)


# ---------------------------------------------------------------------------
# Almost valid messages
# ---------------------------------------------------------------------------

PLAYER_ID_FIELDS = re.compile(r"(^|_)(player|creator|claimant|white|black|opponent|loser|bye|entrant|actor)_?ids?$")
VARIANTS: tuple[str, ...] = (*(v.value for v in Variant), "standard", "checkers", "Italian")
PLAYERS: tuple[str, ...] = ("p_alice", "p_bob", "p_carol", "p_dave", "guest-7", "bot_fritz", "u1234567", "ærøskøbing")


def pool_key(name: str) -> str:
    """The pool an id field reads from: player ids share one; `id` of a message X is `x_id`."""
    if PLAYER_ID_FIELDS.search(name) or name in ("player_ids",):
        return "player_id"
    if name.endswith("_ids"):
        return name[:-1]
    return name


@dataclass
class IdPool:
    """Ids, tokens and names the services returned; almost valid requests draw from them."""

    values: dict[str, list[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    limit: int = 200

    def add(self, key: str, value: str) -> None:
        if not value:
            return
        with self._lock:
            bucket = self.values.setdefault(key, [])
            if value not in bucket:
                bucket.append(value)
                del bucket[: max(0, len(bucket) - self.limit)]

    def pick(self, key: str, index: int, fallback: Iterable[str]) -> str:
        """A returned value when there are some, else one of `fallback` (deterministic in `index`)."""
        with self._lock:
            known = list(self.values.get(key, ()))
        choices = known + list(fallback) if known else list(fallback)
        return choices[index % len(choices)]

    def harvest(self, message: Message, owner: str = "") -> None:
        """Remember every id-like string in a response (recursively)."""
        descriptor = message.DESCRIPTOR
        own = re.sub(r"(?<!^)(?=[A-Z])", "_", descriptor.name).lower()  # Tournament -> tournament
        for fd, value in message.ListFields():
            if fd.type == FieldDescriptor.TYPE_MESSAGE:
                items = value if fd.is_repeated else [value]
                if _is_map(fd):
                    continue
                for item in items:
                    self.harvest(item, own)
            elif fd.type == FieldDescriptor.TYPE_STRING:
                items = value if fd.is_repeated else [value]
                for item in items:
                    if fd.name == "id":
                        self.add(f"{own}_id", item)
                    elif fd.name.endswith("_id") or fd.name.endswith("_ids"):
                        self.add(pool_key(fd.name), item)
                    elif fd.name.endswith("_token"):
                        self.add("page_token" if fd.name == "next_page_token" else fd.name, item)
                    elif fd.name in ("variant",):
                        self.add(fd.name, item)


def _fresh_id(prefix: str) -> st.SearchStrategy[str]:
    return st.text(_HEX, min_size=8, max_size=12).map(lambda h: f"{prefix}{h}")


def _fallback_ids(key: str) -> list[str]:
    if key == "player_id":
        return list(PLAYERS)
    if key == "tournament_id":
        return ["t_000000000000", "t_4f2a9c1e0b7d"]
    if key == "arena_id":
        return ["a_000000000000", "a_4f2a9c1e0b7d"]
    if key == "game_id":
        return ["t_4f2a9c1e0b7d-r1-b1-g1", "g_000000000001", "arena-game-1"]
    return [f"{key.removesuffix('_id')}_1"]


def _pooled(pool: IdPool, key: str) -> st.SearchStrategy[str]:
    fallback = _fallback_ids(key)
    return st.integers(0, 10_000).map(lambda i: pool.pick(key, i, fallback))


# Plausible numbers, by field name (checked in order; the first match wins): the ranges the
# rules accept (T-1, T-3, T-15, AR-1, R-2, ...), with a boundary or two.
_INT_HINTS: tuple[tuple[str, tuple[int, ...]], ...] = (
    (r"base_seconds$", (180, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)),
    (r"increment_seconds$", (2, 0, 1, 3, 5, 10, 30)),
    (r"amount_seconds$", (30, 1, 10, 60, 300)),
    (r"increment_days$|bank_days$", tuple(range(1, 15)) + (0,)),
    (r"_minutes$", (60, 10, 20, 30, 45, 90, 180, 480)),
    (r"_ms$", (60_000, 0, 1000, 300_000)),
    (r"^threshold$", (7, 0, 8, 10, 12, 20)),
    (r"^capacity$", (8, 4, 16, 24, 64, 200)),
    (r"^minimum_entrants$", (4, 0, 6, 8)),
    (r"page_size$", (10, 0, 1, 50, 100)),
    (r"round$", tuple(range(1, 13)) + (0,)),
    (r"thematic_opening$", (0, 0, 0, 1, 7, 42, 174)),
    (r"^number$", tuple(range(1, 121)) + (0,)),
    (r"minimum_rating$", (0, 1000, 1500, 2000)),
)


def _int_choices(fd: FieldDescriptor) -> tuple[int, ...]:
    for pattern, choices in _INT_HINTS:
        if re.search(pattern, fd.name):
            return choices
    return tuple(range(0, 101))


def _plausible_int(fd: FieldDescriptor) -> st.SearchStrategy[int]:
    return st.sampled_from(_int_choices(fd))


def _plausible_timestamp(now: float) -> st.SearchStrategy[Message]:
    # Mostly soon in the future (a start time within a creation window), sometimes past or far.
    offsets = st.one_of(
        st.integers(6 * 60, 3 * 3600),
        st.sampled_from([-3600, -1, 0, 60, 301, 600, 86_400, 7 * 86_400, 13 * 86_400, 40 * 86_400]),
    )
    return offsets.map(lambda s: _timestamp_message((int(now) + s, 0)))


def almost_valid(
    cls: type[Message] | Descriptor, pool: IdPool, *, wild_rate: int = 12, max_depth: int = 5,
    now: Callable[[], float] = time.time,
) -> st.SearchStrategy[Message]:
    """A request that looks real (see the module docstring).

    Half of them are entirely plausible (every field set to a believable value, so the
    request gets through validation to the state); the other half have, per field, a
    1 in `wild_rate` chance of a wild value and a small chance of being left unset.
    """
    descriptor = cls if isinstance(cls, Descriptor) else cls.DESCRIPTOR
    at = now()
    clean = _valid_message(descriptor, pool, max_depth, None, at)
    noisy = _valid_message(descriptor, pool, max_depth, wild_rate, at)
    return st.one_of(clean, noisy)


def _valid_message(descriptor: Descriptor, pool: IdPool, depth: int, wild_rate: int | None,
                   now: float) -> st.SearchStrategy[Message]:
    cls = message_class(descriptor)
    if descriptor.full_name == TIMESTAMP:
        return _plausible_timestamp(now)
    if depth <= 0:
        return st.just(cls())
    in_oneof = {f.name for o in _real_oneofs(descriptor) for f in o.fields}
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for fd in descriptor.fields:
        if fd.name in in_oneof:
            continue
        plausible = _valid_field(fd, pool, depth, wild_rate, now)
        if wild_rate is None:
            # Unset is a plausible choice too for proto3 `optional` scalars ("the default") and
            # for times ("now", e.g. an arena that starts at once).
            optional = fd.has_presence and (fd.type != FieldDescriptor.TYPE_MESSAGE
                                            or fd.message_type.full_name == TIMESTAMP)
            parts[fd.name] = st.one_of(plausible, st.none()) if optional and not fd.is_repeated else plausible
        else:
            absent_odds = 6 if fd.type == FieldDescriptor.TYPE_MESSAGE or fd.has_presence else 10
            parts[fd.name] = _mix(plausible, fd, depth, wild_rate, absent_odds)
    oneofs = []
    for o in _real_oneofs(descriptor):
        members = [st.tuples(st.just(f.name), _valid_field(f, pool, depth, wild_rate, now)) for f in o.fields]
        # The first member is usually the common case (a Fischer clock, ...): half of the draws.
        either = st.one_of(members[0], st.one_of(*members))
        oneofs.append(either if wild_rate is None else st.one_of(either, st.none()))

    def build(args: tuple[dict[str, Any], list[tuple[str, Any] | None]]) -> Message:
        values, chosen = args
        values = dict(values)
        for pick in chosen:
            if pick is not None:
                values[pick[0]] = pick[1]
        return _build(cls, values)

    return st.tuples(st.fixed_dictionaries(parts), st.tuples(*oneofs).map(list)).map(build)


def _mix(plausible: st.SearchStrategy[Any], fd: FieldDescriptor, depth: int, wild_rate: int,
         absent_odds: int) -> st.SearchStrategy[Any]:
    """Mostly plausible; 1 in `absent_odds` absent; 1 in `wild_rate` wild."""
    wild = _wild_field(fd, depth, 3)

    def choose(roll: int) -> st.SearchStrategy[Any]:
        # Hypothesis shrinks the roll towards 0: the plausible value is the simplest.
        if roll % wild_rate == wild_rate - 1:
            return wild
        if roll % absent_odds == absent_odds - 1:
            return st.none()
        return plausible

    return st.integers(0, wild_rate * absent_odds - 1).flatmap(choose)


def _valid_field(
    fd: FieldDescriptor, pool: IdPool, depth: int, wild_rate: int | None, now: float,
) -> st.SearchStrategy[Any]:
    if _is_map(fd):
        return _wild_field(fd, depth, 2)
    single = _valid_single(fd, pool, depth, wild_rate, now)
    if fd.is_repeated:
        return st.lists(single, min_size=0, max_size=5)
    return single


def _valid_single(
    fd: FieldDescriptor, pool: IdPool, depth: int, wild_rate: int | None, now: float,
) -> st.SearchStrategy[Any]:
    t = fd.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        return st.deferred(lambda: _valid_message(fd.message_type, pool, depth - 1, wild_rate, now))
    if t == FieldDescriptor.TYPE_ENUM:
        known = [v.number for v in fd.enum_type.values]
        defined = [n for n in known if n != 0] or known
        # The first defined value is usually the common case (a registered account, ...).
        return st.one_of(st.just(defined[0]), st.sampled_from(defined))
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_STRING:
        return _plausible_string(fd.name, pool)
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(0, 3000, allow_nan=False)
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=16)
    return _plausible_int(fd)


def _plausible_string(name: str, pool: IdPool) -> st.SearchStrategy[str]:
    if name == "variant":
        return st.sampled_from(VARIANTS)
    if name == "request_id":
        return st.text(_HEX, min_size=16, max_size=32)
    if name == "id" or name.endswith("_id") or name.endswith("_ids"):
        key = pool_key(name)
        if key == "player_id":
            return st.one_of(_pooled(pool, key), _fresh_id("p_"))
        return st.one_of(_pooled(pool, key), _fresh_id(key[:1] + "_"))
    if name.endswith("_token"):
        return st.one_of(st.just(""), _pooled(pool, "page_token" if name == "page_token" else name))
    if name == "password":
        return st.sampled_from(["", "", "", "secret", "hunter2"])
    if name in ("reason",):
        return st.sampled_from(["", "opponent used an engine", "clock malfunction", "fair play"])
    if name == "name":
        return st.sampled_from(["Sunday Blitz", "Club Championship 2026", "Arena ⚡", "x"])
    return st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)


# ---------------------------------------------------------------------------
# Requests with one deliberate defect
# ---------------------------------------------------------------------------

# Fields naming a thing a service stores: a random value there names nothing.
REFERENCE_ID = re.compile(r"^(tournament|arena|game|competition)_id$")


def unknown_id(key: str) -> st.SearchStrategy[str]:
    """An id of the right shape that no service handed out."""
    prefix = {"tournament_id": "t_", "arena_id": "a_"}.get(key, "")
    return st.text(_HEX, min_size=12, max_size=12).map(lambda h: f"{prefix}nx{h}")


def refusable(cls: type[Message] | Descriptor, pool: IdPool) -> st.SearchStrategy[Message]:
    """An almost valid request with one defect that should make the service refuse it.

    Times are a day or more ahead so that a request accepted after all starts nothing
    while the state is being compared.
    """
    descriptor = cls if isinstance(cls, Descriptor) else cls.DESCRIPTOR
    base = _valid_message(descriptor, pool, 5, None, time.time() + 2 * 86_400)
    references = [fd for fd in descriptor.fields if REFERENCE_ID.match(fd.name)]
    top = list(descriptor.fields)

    @st.composite
    def defective(draw: st.DrawFn) -> Message:
        msg = draw(base)
        kinds = ["clear", "junk"]
        if references:
            kinds = ["unknown_id", *kinds]
        kind = draw(st.sampled_from(kinds))
        if kind == "unknown_id":
            for fd in references:
                setattr(msg, fd.name, draw(unknown_id(fd.name)))
            return msg
        if not top:
            return msg
        fd = draw(st.sampled_from(top))
        if kind == "clear":
            msg.ClearField(fd.name)
            return msg
        _spoil(msg, fd, draw)
        return msg

    return defective()


_JUNK = tuple(t for t in ("", "x" * 5000, "\x00", "\u202e", "nonexistent-thing") if ALLOW_NUL or "\x00" not in t)


def _spoil(msg: Message, fd: FieldDescriptor, draw: st.DrawFn) -> None:
    """Give one field (or a field of the sub-message it holds) an unusable value."""
    if fd.is_repeated:
        if fd.type == FieldDescriptor.TYPE_STRING:
            getattr(msg, fd.name).extend(draw(st.lists(st.sampled_from(_JUNK[:3]), min_size=1, max_size=3)))
        else:
            msg.ClearField(fd.name)
        return
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        inner = getattr(msg, fd.name)
        if fd.message_type.full_name == TIMESTAMP:
            seconds = draw(st.sampled_from([INT64[0], TS_MIN_SECONDS - 1, TS_MAX_SECONDS + 1, INT64[1]]))
            inner.seconds = seconds
            return
        subfields = [f for f in fd.message_type.fields if not f.is_repeated]
        if not subfields:
            msg.ClearField(fd.name)
            return
        _spoil(inner, draw(st.sampled_from(subfields)), draw)
        return
    if fd.type == FieldDescriptor.TYPE_STRING:
        setattr(msg, fd.name, draw(st.sampled_from(_JUNK)))
    elif fd.type == FieldDescriptor.TYPE_ENUM:
        setattr(msg, fd.name, draw(st.sampled_from([999, -1])))
    elif fd.type == FieldDescriptor.TYPE_BOOL:
        setattr(msg, fd.name, not getattr(msg, fd.name))
    elif fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        setattr(msg, fd.name, draw(st.sampled_from([math.nan, -math.inf, -1.0])))
    elif fd.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_UINT64,
                     FieldDescriptor.TYPE_FIXED64):
        setattr(msg, fd.name, draw(st.sampled_from([UINT32[1]])))
    elif fd.type == FieldDescriptor.TYPE_BYTES:
        setattr(msg, fd.name, b"\x00" * 100)
    else:
        bounds = INT64 if fd.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64,
                                      FieldDescriptor.TYPE_SFIXED64) else INT32
        setattr(msg, fd.name, draw(st.sampled_from([bounds[0], -1, bounds[1]])))


# ---------------------------------------------------------------------------
# Edge requests: every field at once at one extreme (deterministic, tried first)
# ---------------------------------------------------------------------------

_EDGE_MODES: dict[str, dict[str, Any]] = {
    # strings, signed ints, unsigned ints, floating point, enums, Timestamp (seconds, nanos), bytes
    "zero": {"str": "", "int": 0, "uint": 0, "float": 0.0, "enum": 0, "ts": (0, 0), "bytes": b""},
    "nul": {"str": "\x00", "int": 1, "uint": 1, "float": 1.0, "enum": 1, "ts": (0, 0), "bytes": b"\x00"},
    "long": {"str": "é" * 20_000, "int": 2**31 - 1, "uint": 2**32 - 1, "float": 1e308, "enum": 2**31 - 1,
             "ts": (TS_MAX_SECONDS + 1, 999_999_999), "bytes": b"\xff" * 20_000},
    "max": {"str": "x" * 300, "int": None, "uint": None, "float": math.inf, "enum": -1,
            "ts": (INT64[1], 0), "bytes": b"x" * 300},
    "min": {"str": " ", "int": "min", "uint": 0, "float": math.nan, "enum": -(2**31),
            "ts": (INT64[0], -1), "bytes": b""},
}


def edge_messages(cls: type[Message] | Descriptor, *, max_depth: int = 4) -> list[tuple[str, Message]]:
    """(name, request) with every field, nested ones included, at one extreme: all empty, all NUL,
    all huge, all maximal, all minimal. Cheap to send and easy to read when one fails."""
    descriptor = cls if isinstance(cls, Descriptor) else cls.DESCRIPTOR
    out = []
    for name, mode in _EDGE_MODES.items():
        if name == "nul" and not ALLOW_NUL:
            continue
        out.append((name, _fill(descriptor, mode, max_depth)))
    return out


def _edge_scalar(fd: FieldDescriptor, mode: dict[str, Any]) -> Any:
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        return mode["str"]
    if t == FieldDescriptor.TYPE_BYTES:
        return mode["bytes"]
    if t == FieldDescriptor.TYPE_BOOL:
        return bool(mode["int"])
    if t == FieldDescriptor.TYPE_ENUM:
        return mode["enum"]
    if t == FieldDescriptor.TYPE_DOUBLE:
        return mode["float"]
    if t == FieldDescriptor.TYPE_FLOAT:
        value = mode["float"]
        return value if not math.isfinite(value) or abs(value) < 3e38 else 3e38
    unsigned = t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_UINT64,
                     FieldDescriptor.TYPE_FIXED64)
    wide = t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64,
                 FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64)
    bounds = (UINT64 if wide else UINT32) if unsigned else (INT64 if wide else INT32)
    value = mode["uint" if unsigned else "int"]
    if value is None:
        return bounds[1]
    if value == "min":
        return bounds[0]
    return max(bounds[0], min(bounds[1], value))


def _fill(descriptor: Descriptor, mode: dict[str, Any], depth: int) -> Message:
    cls = message_class(descriptor)
    if descriptor.full_name == TIMESTAMP:
        return _timestamp_message(mode["ts"])
    msg = cls()
    if depth <= 0:
        return msg
    done_oneofs: set[str] = set()
    for fd in descriptor.fields:
        oneof = fd.containing_oneof
        if oneof is not None and oneof in _real_oneofs(descriptor):
            if oneof.name in done_oneofs:
                continue
            done_oneofs.add(oneof.name)
        if _is_map(fd):
            continue
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            value = _fill(fd.message_type, mode, depth - 1)
        else:
            value = _edge_scalar(fd, mode)
        _assign(msg, fd, [value] if fd.is_repeated else value)
    return msg


# ---------------------------------------------------------------------------
# One field at an extreme in an otherwise plausible request (deterministic)
# ---------------------------------------------------------------------------


def plausible_request(cls: type[Message] | Descriptor, pool: IdPool, *, index: int = 0, max_depth: int = 5,
                      now: float | None = None) -> Message:
    """An entirely plausible request, built without randomness: the `index`-th id the services
    handed out, a known variant, the first defined enum values, the first oneof member, common
    numbers, times 15 minutes after `now`."""
    descriptor = cls if isinstance(cls, Descriptor) else cls.DESCRIPTOR
    return _first(descriptor, pool, max_depth, time.time() if now is None else now, index)


def fresh_plausible_request(cls: type[Message] | Descriptor, pool: IdPool, *, index: int = 0,
                            now: float | None = None) -> Message:
    """`plausible_request` by a new acting player with a new request id (so it is not a replay)."""
    msg = plausible_request(cls, pool, index=index, now=now)
    _freshen(msg, ())
    return msg


def _first(descriptor: Descriptor, pool: IdPool, depth: int, now: float, index: int = 0) -> Message:
    if descriptor.full_name == TIMESTAMP:
        return _timestamp_message((int(now) + 15 * 60, 0))
    msg = message_class(descriptor)()
    if depth <= 0:
        return msg
    done_oneofs: set[str] = set()
    for fd in descriptor.fields:
        oneof = fd.containing_oneof
        if oneof is not None and oneof in _real_oneofs(descriptor):
            if oneof.name in done_oneofs:
                continue
            done_oneofs.add(oneof.name)
        if _is_map(fd):
            continue
        t = fd.type
        if t == FieldDescriptor.TYPE_MESSAGE:
            value: Any = _first(fd.message_type, pool, depth - 1, now, index)
        elif t == FieldDescriptor.TYPE_ENUM:
            defined = [v.number for v in fd.enum_type.values if v.number != 0] or [0]
            value = defined[0]
        elif t == FieldDescriptor.TYPE_STRING:
            value = _first_string(fd.name, pool, index)
        elif t == FieldDescriptor.TYPE_BOOL:
            value = False
        elif t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            value = 1500.0
        elif t == FieldDescriptor.TYPE_BYTES:
            value = b"x"
        else:
            value = _int_choices(fd)[0]
        _assign(msg, fd, [value] if fd.is_repeated else value)
    return msg


def _first_string(name: str, pool: IdPool, index: int = 0) -> str:
    if name == "variant":
        return VARIANTS[0]
    if name == "request_id":
        return "req-" + secrets.token_hex(8)  # a new one each time: a repeated id replays the first call
    if name == "id" or name.endswith("_id") or name.endswith("_ids"):
        key = pool_key(name)
        return pool.pick(key, index, _fallback_ids(key))
    if name == "name":
        return "Sunday Blitz"
    return ""


def _field_edges(fd: FieldDescriptor) -> list[tuple[str, Any]]:
    t = fd.type
    if t == FieldDescriptor.TYPE_MESSAGE:
        if fd.message_type.full_name == TIMESTAMP:
            return [("max", _timestamp_message((INT64[1], 0))), ("min", _timestamp_message((INT64[0], 0))),
                    ("nanos", _timestamp_message((0, -1)))]
        return []
    if t == FieldDescriptor.TYPE_STRING:
        return ([("NUL", "a\x00b")] if ALLOW_NUL else []) + [("huge", "é" * 50_000)]
    if t == FieldDescriptor.TYPE_ENUM:
        return [("unknown", 999), ("negative", -1)]
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return [("nan", math.nan), ("inf", math.inf)]
    if t in (FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_BYTES):
        return []
    return [("max", _edge_scalar(fd, _EDGE_MODES["max"])), ("min", _edge_scalar(fd, _EDGE_MODES["min"]))]


def _field_paths(
    descriptor: Descriptor, depth: int, prefix: tuple[str, ...] = (),
) -> list[tuple[tuple[str, ...], FieldDescriptor]]:
    paths = []
    for fd in descriptor.fields:
        if _is_map(fd):
            continue
        path = (*prefix, fd.name)
        paths.append((path, fd))
        if (fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.full_name != TIMESTAMP
                and not fd.is_repeated and depth > 1):
            paths.extend(_field_paths(fd.message_type, depth - 1, path))
    return paths


def field_edge_messages(
    cls: type[Message] | Descriptor, pool: IdPool, *, max_depth: int = 4,
) -> list[tuple[str, Message]]:
    """(label, request): the plausible request, then copies of it with one field (nested ones
    included) at an extreme: NUL or huge strings, int limits, unknown enums, NaN, extreme times."""
    base = fresh_plausible_request(cls, pool)
    out: list[tuple[str, Message]] = [("plausible", base)]
    descriptor = base.DESCRIPTOR
    for path, fd in _field_paths(descriptor, max_depth):
        for label, value in _field_edges(fd):
            out.append((f"{'.'.join(path)}={label}", _with_field(base, path, fd, [value, value] if fd.is_repeated
                                                                 else value)))
    return out


def _with_field(base: Message, path: tuple[str, ...], fd: FieldDescriptor, value: Any) -> Message:
    """A copy of `base` with the field at `path` set to `value` alone, by a new acting player (`_freshen`)."""
    msg = type(base)()
    msg.CopyFrom(base)
    target = msg
    for name in path[:-1]:
        target = getattr(target, name)
    target.ClearField(fd.name)
    _assign(target, fd, value)
    _freshen(msg, path)
    return msg


def _freshen(msg: Message, edited: tuple[str, ...]) -> None:
    """A new request id (else the service replays the first answer) and a new acting player
    (else one live competition per creator refuses every create after the first)."""
    fields = msg.DESCRIPTOR.fields_by_name
    if "request_id" in fields and edited != ("request_id",):
        msg.request_id = "req-" + secrets.token_hex(8)
    actor = fields.get("actor")
    if (actor is not None and actor.type == FieldDescriptor.TYPE_MESSAGE and msg.HasField("actor")
            and "player_id" in actor.message_type.fields_by_name and edited != ("actor", "player_id")):
        msg.actor.player_id = "p_edge_" + secrets.token_hex(5)


# ---------------------------------------------------------------------------
# Input hygiene: the probe's cases, one field at a time in a plausible request
# ---------------------------------------------------------------------------

HUGE_ID = "x" * 60_000
# What a display name must never be: a screen-clearing ANSI escape, a second line, a bidi override,
# nothing visible.
BAD_NAMES: tuple[tuple[str, str], ...] = (
    ("ansi", "\x1b[2J\x1b[31mFREE PRIZES\x1b[0m"), ("newline", "Friday\nblitz"), ("bidi", "Blitz \u202eniw"),
    ("isolate", "Blitz \u2067night\u2069"), ("zero-width", "\u200b\u200b\u200b"),
)
_ID_FIELD = re.compile(r"(^id$|_ids?$|_token$|^password$)")


@dataclass(frozen=True)
class HygieneCase:
    """A plausible request with one field the services must refuse with INVALID_ARGUMENT, in a short message."""

    label: str
    request: Message
    # A word the refusal must hold (the field's name).
    word: str


def hygiene_messages(cls: type[Message] | Descriptor, pool: IdPool) -> list[HygieneCase]:
    """Every id, token and secret at 60,000 characters; every player id as " "; every display name misleading."""
    base = fresh_plausible_request(cls, pool)
    cases: list[HygieneCase] = []
    for path, fd in _field_paths(base.DESCRIPTOR, 4):
        if fd.type != FieldDescriptor.TYPE_STRING:
            continue
        values: list[tuple[str, str]] = []
        if _ID_FIELD.search(fd.name):
            values.append(("60k", HUGE_ID))
        if pool_key(fd.name) == "player_id" or fd.name == "around_player_id":
            values.append(("blank", " "))
        if fd.name == "name":
            values += list(BAD_NAMES)
        for label, value in values:
            request = _with_field(base, path, fd, [value] if fd.is_repeated else value)
            cases.append(HygieneCase(f"{'.'.join(path)}={label}", request, path[-1]))
    return cases
