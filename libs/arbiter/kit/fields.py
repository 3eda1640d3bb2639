"""Input hygiene: one rule per kind of field, for every servicer and for the consumers' boundary.

What callers and producers send is checked here before anything stores it, keys a cache
with it or writes it to a log: ids (player, competition, game, request, event ids and
tokens), the names people see, secrets, free text and enums and timestamps of events.
A refusal names the field and never repeats a long value whole (`shown`).

Why the limits are what they are:
- player ids: 128 characters. Account ids of play sites (UUIDs, user names, database keys)
  are far shorter; three services already refused more, and an id travels in Redis keys,
  comma-separated Redis lines and every log line about a game, so the tighter of the two
  limits found (128 and 200) was kept.
- competition ids: 128 (ours are 14 characters; other competitions' come from the play site).
- game ids: 256, room for a play site's id that embeds its two players' ids.
- request ids (a caller's retry key): 128, room for a UUID three times.
- event ids: 512: ours are UUIDs or a game id with a suffix; the deduplication table indexes them.
- tokens (page tokens, invite tokens): 8,192; the rating history's page token names a game id.
- secrets (passwords): 256; they are hashed, never shown.
- names people see: 80; free text in events: 4,096.
Every one of them keeps an indexed PostgreSQL row far below the index's 2,704-byte entry limit.

Trace ids (`arbiter.kit.trace`) are 1 to 128 ASCII letters, digits and `- _ . : / + = @`: room
for a W3C traceparent, a UUID or a play site's request id. They travel in gRPC metadata and
Kafka headers (ASCII) and in every log line, where a support engineer searches for them as
written: nothing in them is escaped in a JSON line. A trace id is never refused: one that breaks
the rule is not used and the work gets a fresh one, as a diagnostic must not cost a call or an event.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from arbiter.kit.errors import InvalidArgument


@dataclass(frozen=True)
class IdKind:
    """A kind of id: what people call it, its longest length, and characters it may not hold besides the rule's."""

    noun: str
    max_length: int
    # Characters this kind may not hold on top of the common rule (a player id: commas, see `id_problem`).
    forbidden: str = ""


PLAYER_ID: Final = IdKind("player id", 128, forbidden=",")
COMPETITION_ID: Final = IdKind("competition id", 128)
GAME_ID: Final = IdKind("game id", 256)
REQUEST_ID: Final = IdKind("request id", 128)
EVENT_ID: Final = IdKind("event id", 512)
TOKEN: Final = IdKind("token", 8192)

TRACE_ID_MAX_LENGTH: Final = 128
_TRACE_ID: Final = re.compile(rf"[A-Za-z0-9_.:/+=@-]{{1,{TRACE_ID_MAX_LENGTH}}}")
SECRET_MAX_LENGTH: Final = 256
NAME_MAX_LENGTH: Final = 80
TEXT_MAX_LENGTH: Final = 4096
# How much of a refused value a message or a log line shows.
SHOWN_LENGTH: Final = 32


def shown(value: str, keep: int = SHOWN_LENGTH) -> str:
    """`value` as errors and logs show it: control and invisible characters escaped, cut past `keep` with its length."""
    cut = value[:keep]
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in cut)
    if len(value) <= keep:
        return escaped
    return f"{escaped}… ({len(value):,} characters)"


def quoted(value: str) -> str:
    """`shown(value)` in double quotes, for a message that names the value."""
    return f'"{shown(value)}"'


def id_problem(value: str, kind: IdKind) -> str | None:
    """What is wrong with `value` as an id of `kind` (None when nothing), in words that follow the field's name.

    The rule of every id: not blank, at most the kind's length, no surrounding spaces and no
    control or invisible characters (NUL, newlines, bidi controls, zero-width characters,
    non-ASCII spaces: what `str.isprintable` refuses). A player id holds no comma either: ids
    travel in comma-separated Redis lines.
    """
    if not value:
        return "is empty"
    if len(value) > kind.max_length:
        return f"has {len(value):,} characters; {kind.noun}s have at most {kind.max_length}"
    stripped = value.strip()
    if not stripped:
        return f"is blank; a {kind.noun} needs visible characters"
    if stripped != value:
        return f"{quoted(value)} has surrounding spaces; send the {kind.noun} itself"
    if not value.isprintable():
        return f"{quoted(value)} holds control or invisible characters; a {kind.noun} cannot"
    for character in kind.forbidden:
        if character in value:
            return f"{quoted(value)} holds {character!r}; a {kind.noun} cannot"
    return None


def is_trace_id(value: str) -> bool:
    """Whether `value` can be a trace id: 1 to TRACE_ID_MAX_LENGTH ASCII letters, digits and `- _ . : / + = @`."""
    return _TRACE_ID.fullmatch(value) is not None


def trace_id_problem(value: str) -> str | None:
    """Why `value` cannot be a trace id, in words that follow its name; None when it can."""
    if is_trace_id(value):
        return None
    if not value:
        return "is empty"
    if len(value) > TRACE_ID_MAX_LENGTH:
        return f"has {len(value):,} characters; trace ids have at most {TRACE_ID_MAX_LENGTH}"
    return f"{quoted(value)} holds characters other than ASCII letters, digits and - _ . : / + = @"


def check_id(value: str, kind: IdKind, field: str) -> str:
    """`value` when it is a valid id of `kind`, else INVALID_ARGUMENT naming `field` (empty: "`field` is required")."""
    if not value:
        raise InvalidArgument(f"{field} is required")
    problem = id_problem(value, kind)
    if problem is not None:
        raise InvalidArgument(f"{field} {problem}")
    return value


def check_optional_id(value: str, kind: IdKind, field: str) -> str:
    """`value` checked as an id of `kind` when given; "" stays "" (the field was left out)."""
    return check_id(value, kind, field) if value else value


def check_secret(value: str, field: str) -> str:
    """A password as given, refused (never shown) when longer than SECRET_MAX_LENGTH or holding control characters."""
    if len(value) > SECRET_MAX_LENGTH:
        raise InvalidArgument(f"{field} has {len(value):,} characters; at most {SECRET_MAX_LENGTH}")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise InvalidArgument(f"{field} holds control characters (newlines, escapes ...); a password cannot")
    return value


# Bidi embeddings, overrides and isolates: they reorder the text around them (a name that reads
# "Blitz" may be stored as "ztilB").
_BIDI_CONTROLS: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
# Format characters that belong inside visible text: joiners of emoji sequences and of scripts
# that need them (Persian, Indic), and the tags of subdivision flags.
_JOINERS: Final = frozenset("\u200c\u200d")
_TAGS: Final = range(0xE0020, 0xE0080)
# Letters that draw nothing.
_BLANK_LETTERS: Final = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_INVISIBLE_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})


def name_problem(text: str) -> str | None:
    """What is wrong with `text` (already trimmed) as a name people see; None when nothing.

    Refused: control characters (ANSI escapes, newlines, tabs), line and paragraph separators,
    bidi controls, invisible format characters (zero-width spaces, byte order marks, soft
    hyphens) and text with nothing visible in it. Joiners stay allowed inside visible text.
    """
    if not text:
        return "is empty"
    if len(text) > NAME_MAX_LENGTH:
        return f"has {len(text):,} characters; at most {NAME_MAX_LENGTH}"
    visible = False
    for character in text:
        category = unicodedata.category(character)
        if category == "Cc" or category in ("Zl", "Zp"):
            return f"{quoted(text)} holds control characters (escapes, newlines, tabs); a name cannot"
        if character in _BIDI_CONTROLS:
            return f"{quoted(text)} holds bidi controls, which reorder the text shown around them; a name cannot"
        if category == "Cf" and character not in _JOINERS and ord(character) not in _TAGS:
            return f"{quoted(text)} holds invisible characters (zero-width spaces ...); a name cannot"
        if category not in _INVISIBLE_CATEGORIES and character not in _BLANK_LETTERS:
            visible = True
    if not visible:
        return f"{quoted(text)} has nothing visible in it"
    return None


def display_name(text: str, what: str) -> str:
    """The name of `what` ("a tournament") people will see, trimmed; INVALID_ARGUMENT when `name_problem` finds one."""
    cleaned = text.strip()
    if not cleaned:
        raise InvalidArgument(f"{what} needs a name")
    problem = name_problem(cleaned)
    if problem is not None:
        raise InvalidArgument(f"the name {problem}")
    return cleaned


# ---------------------------------------------------------------------------
# Events at the consumers' boundary
# ---------------------------------------------------------------------------

# The kind of every id field of the events, by field name (CompetitionRef's `id` below).
EVENT_ID_FIELDS: Final[dict[str, IdKind]] = {
    "game_id": GAME_ID, "game_ids": GAME_ID,
    "player_id": PLAYER_ID, "white_id": PLAYER_ID, "black_id": PLAYER_ID, "loser_id": PLAYER_ID,
    "creator_id": PLAYER_ID, "bye_id": PLAYER_ID, "entrant_ids": PLAYER_ID, "opponent_id": PLAYER_ID,
    "tournament_id": COMPETITION_ID, "arena_id": COMPETITION_ID, "competition_id": COMPETITION_ID,
    "event_id": EVENT_ID, "causation_id": EVENT_ID,
}
_ID_OF_MESSAGE: Final = {"arbiter.contracts.CompetitionRef": {"id": COMPETITION_ID}}
_TIMESTAMP: Final = "google.protobuf.Timestamp"
# A datetime's range, 0001-01-01 .. 9999-12-31, in seconds from the epoch (as kit.events.datetime_of).
FIRST_SECOND: Final = -62_135_596_800
LAST_SECOND: Final = 253_402_300_799
# Nesting deeper than this is not looked into (no event type comes close).
_MAX_DEPTH: Final = 6

EventCheck = Callable[[Message], "str | None"]


def event_problem(event: Message, required: tuple[str, ...] = ()) -> str | None:
    """What makes `event` unfit for any consumer (None when nothing): the first problem found, naming its field.

    Every id field follows its kind's rule (`id_problem`) when set, and the fields named in
    `required` (a topic's key) are set; free text holds no NUL (PostgreSQL text cannot) and at
    most TEXT_MAX_LENGTH characters; every enum holds a value its type defines; every
    timestamp is a date (years 1..9999). Nested messages are checked alike.
    """
    return event_check(event.DESCRIPTOR, required)(event)


@cache
def event_check(descriptor: Descriptor, required: tuple[str, ...] = ()) -> EventCheck:
    """`event_problem` for one message type, built once as straight-line code: check(event) -> problem.

    Every consumed event passes through it before its handler, so it reads each field once
    and calls nothing while all is well: a generic walk over `ListFields` with a function per
    field cost several times as much per event (tests/bench/bench_consumer_boundary.py).
    """
    builder = _CheckBuilder()
    for name in required:
        builder.lines += [f"    if not m.{name}:", f"        return _fail({name!r}, 'required', m.{name})"]
    builder.message(descriptor, "m", "", "    ", 0)
    lines = ["def check(m):", *builder.lines, "    return None"]
    namespace = dict(builder.constants)
    exec(compile("\n".join(lines), f"<event check of {descriptor.full_name}>", "exec"), namespace)
    return namespace["check"]  # type: ignore[return-value]  # the function exec() just built


class _CheckBuilder:
    """The source lines of one `event_check`, one check per field in field order."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, object] = {"_fail": _failure}
        self._names = 0

    def name(self, prefix: str) -> str:
        """A local variable name of its own."""
        self._names += 1
        return f"{prefix}{self._names}"

    def message(self, descriptor: Descriptor, target: str, path: str, pad: str, depth: int) -> bool:
        """Add the checks of `descriptor`'s fields read from `target`; False when none was needed."""
        ids = _ID_OF_MESSAGE.get(descriptor.full_name, {})
        added = False
        for field in descriptor.fields:
            where, access = f"{path}{field.name}", f"{target}.{field.name}"
            if not field.is_repeated:
                added |= self.value(field, ids.get(field.name), access, where, pad, depth)
                continue
            if field.type == FieldDescriptor.TYPE_MESSAGE and message_type_of(field).GetOptions().map_entry:
                continue
            index, item = self.name("i"), self.name("v")
            outer = self.lines
            self.lines = []
            if self.value(field, ids.get(field.name), item, f"{where}[{{{index}}}]", pad + "    ", depth + 1):
                outer += [f"{pad}for {index}, {item} in enumerate({access}):", *self.lines]
                added = True
            self.lines = outer
        return added

    def value(self, field: FieldDescriptor, kind: IdKind | None, access: str, where: str, pad: str,
              depth: int) -> bool:
        """Add the check of one value of `field`, read by `access`; False when it needs none."""
        # Inside a repeated field `where` names its index variable: the failure formats it in.
        label = f"f{where!r}" if "{" in where else repr(where)
        if field.type == FieldDescriptor.TYPE_STRING:
            kind = kind or EVENT_ID_FIELDS.get(field.name)
            if kind is None:
                self.lines += [f"{pad}v = {access}", f"{pad}if '\\x00' in v or len(v) > {TEXT_MAX_LENGTH}:",
                               f"{pad}    return _fail({label}, 'text', v)"]
                return True
            constant = f"K_{kind.noun.replace(' ', '_')}"
            self.constants[constant] = kind
            extra = "".join(f" or {c!r} in v" for c in kind.forbidden)
            # isprintable refuses every space but " ": ends that are not " " are no spaces at all.
            self.lines += [f"{pad}v = {access}",
                           f"{pad}if v and (len(v) > {kind.max_length} or not v.isprintable() or v[0] == ' '"
                           f" or v[-1] == ' '{extra}):",
                           f"{pad}    return _fail({label}, {constant}, v)"]
            return True
        if field.type == FieldDescriptor.TYPE_ENUM:
            enum_type = enum_type_of(field)
            constant = f"E_{enum_type.full_name.replace('.', '_')}"
            self.constants[constant] = frozenset(enum_type.values_by_number)
            self.constants[constant + "_name"] = enum_type.name
            self.lines += [f"{pad}if {access} not in {constant}:",
                           f"{pad}    return _fail({label}, {constant}_name, {access})"]
            return True
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            return False
        variable = self.name("n")
        message_type = message_type_of(field)
        if message_type.full_name == _TIMESTAMP:
            self.lines += [f"{pad}{variable} = {access}",
                           f"{pad}if not ({FIRST_SECOND} <= {variable}.seconds <= {LAST_SECOND}"
                           f" and 0 <= {variable}.nanos < 1000000000):",
                           f"{pad}    return _fail({label}, 'timestamp', {variable})"]
            return True
        if depth >= _MAX_DEPTH:
            return False
        self.lines.append(f"{pad}{variable} = {access}")
        if self.message(message_type, variable, where + ".", pad, depth + 1):
            return True
        self.lines.pop()
        return False


def message_type_of(field: FieldDescriptor) -> Descriptor:
    """The type of a message field (protobuf's types leave it optional, as other fields have none)."""
    if field.message_type is None:
        raise TypeError(f"{field.full_name} is not a message field")
    return field.message_type


def enum_type_of(field: FieldDescriptor) -> EnumDescriptor:
    """The type of an enum field (protobuf's types leave it optional, as other fields have none)."""
    if field.enum_type is None:
        raise TypeError(f"{field.full_name} is not an enum field")
    return field.enum_type


def _failure(where: str, rule: object, value: Any) -> str:
    """The words of a failed check (only ever built when one fails)."""
    if rule == "required":
        noun = EVENT_ID_FIELDS[where].noun if where in EVENT_ID_FIELDS else where
        return f"{where} is empty: the event names no {noun}"
    if rule == "text":
        if "\x00" in value:
            return f"{where} holds a NUL character; text cannot"
        return f"{where} has {len(value):,} characters; text fields of events have at most {TEXT_MAX_LENGTH}"
    if rule == "timestamp":
        return f"{where} ({value.seconds} s, {value.nanos} ns) is not a date of years 1..9999"
    if isinstance(rule, IdKind):
        return f"{where} {id_problem(value, rule)}"
    return f"{where} is {value}, which {rule} does not define (in this version)"


def nul_field(message: Any, prefix: str = "") -> str | None:
    """The path of the first string field holding a NUL character, or None.

    PostgreSQL text cannot store NUL; refusing it at the door keeps it out of every service.
    """
    for field, value in message.ListFields():
        name = f"{prefix}{field.name}"
        if field.type == field.TYPE_STRING:
            values = value if field.is_repeated else (value,)
            if any("\x00" in item for item in values):
                return name
        elif field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue
            values = value if field.is_repeated else (value,)
            for index, item in enumerate(values):
                inner = nul_field(item, f"{name}[{index}]." if field.is_repeated else f"{name}.")
                if inner:
                    return inner
    return None
