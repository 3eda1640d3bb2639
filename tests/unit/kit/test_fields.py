"""Input hygiene (kit.fields): one rule per kind of field, refusals that never repeat a long value whole."""

from __future__ import annotations

import unicodedata

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.errors import InvalidArgument
from arbiter.kit.events import ALL_TOPICS
from arbiter.kit.fields import (
    COMPETITION_ID,
    EVENT_ID_FIELDS,
    GAME_ID,
    NAME_MAX_LENGTH,
    PLAYER_ID,
    SECRET_MAX_LENGTH,
    SHOWN_LENGTH,
    TEXT_MAX_LENGTH,
    TOKEN,
    check_id,
    check_secret,
    display_name,
    event_problem,
    id_problem,
    name_problem,
    nul_field,
    shown,
)
from arbiter_tools.poison import plausible_event, poison_records

ID_KINDS = (PLAYER_ID, COMPETITION_ID, GAME_ID, TOKEN)


def test_a_long_value_is_shown_cut_with_its_length() -> None:
    assert shown("t_42") == "t_42"
    assert shown("x" * 60_000) == "x" * 32 + "… (60,000 characters)"
    assert shown("a\x1b[31mb\n\u202e") == "a\\x1b[31mb\\n\\u202e"


@pytest.mark.parametrize("kind", ID_KINDS, ids=lambda kind: kind.noun)
def test_every_kind_of_id_refuses_what_the_probe_sent(kind) -> None:
    huge = "x" * 60_000
    assert id_problem(huge, kind) == f"has 60,000 characters; {kind.noun}s have at most {kind.max_length}"
    assert id_problem(" ", kind) == f"is blank; a {kind.noun} needs visible characters"
    assert id_problem("", kind) == "is empty"
    assert "surrounding spaces" in id_problem(" t_1", kind)
    for hidden in ("a\x00b", "a\nb", "a\u202eb", "a\u200bb", "a\u00a0b", "\x1b[31mred"):
        assert "control or invisible characters" in id_problem(hidden, kind)
    assert id_problem("x" * kind.max_length, kind) is None
    assert id_problem("t_4f2a 9-r1 é", kind) is None


def test_only_player_ids_refuse_commas() -> None:
    assert id_problem("a,b", PLAYER_ID) == "\"a,b\" holds ','; a player id cannot"
    assert id_problem("a,b", GAME_ID) is None


def test_one_player_id_rule_and_one_length_everywhere() -> None:
    with pytest.raises(InvalidArgument, match="^actor.player_id is blank"):
        check_id(" ", PLAYER_ID, "actor.player_id")
    with pytest.raises(InvalidArgument, match="^tournament_id is required$"):
        check_id("", COMPETITION_ID, "tournament_id")
    with pytest.raises(InvalidArgument) as refused:
        check_id("t" * 60_000, COMPETITION_ID, "tournament_id")
    assert refused.value.message == "tournament_id has 60,000 characters; competition ids have at most 128"
    assert PLAYER_ID.max_length == 128


@given(st.text(max_size=300), st.sampled_from(ID_KINDS))
def test_an_id_is_accepted_exactly_when_the_rule_says_and_a_refusal_stays_short(value: str, kind) -> None:
    acceptable = (0 < len(value) <= kind.max_length and value.isprintable() and value == value.strip()
                  and not any(c in value for c in kind.forbidden))
    problem = id_problem(value, kind)
    assert (problem is None) == acceptable


@given(st.text(min_size=1, max_size=60_000).map(lambda text: text * 3), st.sampled_from(ID_KINDS))
def test_a_refusal_is_short_whatever_the_id(value: str, kind) -> None:
    """At most the first SHOWN_LENGTH characters, each escaped in at most ten."""
    problem = id_problem(value, kind)
    if problem is not None:
        assert len(problem) < SHOWN_LENGTH * 10 + 100


@pytest.mark.parametrize("name, why", [
    ("\x1b[31mRed\x1b[0m Blitz", "control characters"),
    ("\x1b[2J\x1b[31mFREE PRIZES\x1b[0m", "control characters"),
    ("Friday\nBlitz", "control characters"),
    ("Friday\tBlitz", "control characters"),
    ("Friday\u2028Blitz", "control characters"),
    ("\u202eztilB", "bidi controls"),
    ("Blitz \u202eniw\u202c", "bidi controls"),
    ("Blitz \u2066night\u2069", "bidi controls"),
    ("Blitz \u2067night\u2069", "bidi controls"),
    ("\u200b\u200b\u200b", "invisible characters"),
    ("Blitz\ufeff", "invisible characters"),
    (" \ufeff ", "invisible characters"),
    ("\u3164\u3164", "nothing visible"),
    ("\u0301", "nothing visible"),
    ("x" * (NAME_MAX_LENGTH + 1), f"81 characters; at most {NAME_MAX_LENGTH}"),
])
def test_names_people_see_refuse_what_would_mislead_or_break_a_screen(name: str, why: str) -> None:
    with pytest.raises(InvalidArgument, match="^the name ") as refused:
        display_name(name, "a tournament")
    assert why in refused.value.message


@pytest.mark.parametrize("name, stored", [
    ("  Friday blitz \n", "Friday blitz"),
    ("👨\u200d👩\u200d👧 family cup", "👨\u200d👩\u200d👧 family cup"),
    ("می\u200cخواهم", "می\u200cخواهم"),
    ("Ōsaka Open — Round ½", "Ōsaka Open — Round ½"),
    ("x" * NAME_MAX_LENGTH, "x" * NAME_MAX_LENGTH),
])
def test_ordinary_names_are_kept_trimmed(name: str, stored: str) -> None:
    assert display_name(name, "an arena") == stored


def test_a_missing_name_says_what_needs_one() -> None:
    with pytest.raises(InvalidArgument, match="^an arena needs a name$"):
        display_name(" \t ", "an arena")


@given(st.text(max_size=90))
def test_an_accepted_name_shows_something_and_hides_nothing(text: str) -> None:
    if name_problem(text) is None:
        assert any(unicodedata.category(c) not in ("Zs", "Cc", "Cf", "Mn", "Me") for c in text)
        assert not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text)
        assert not any("\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069" for c in text)


def test_secrets_are_bounded_and_never_shown() -> None:
    assert check_secret("open sesame", "password") == "open sesame"
    with pytest.raises(InvalidArgument) as refused:
        check_secret("s3cret" * 10_000, "password")
    assert refused.value.message == f"password has 60,000 characters; at most {SECRET_MAX_LENGTH}"
    with pytest.raises(InvalidArgument, match="control characters"):
        check_secret("a\nb", "password")


# ---------------------------------------------------------------------------
# Events at the consumers' boundary
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ALL_TOPICS, ids=lambda topic: topic.name)
def test_an_ordinary_event_passes_and_every_poison_kind_is_caught(topic) -> None:
    assert event_problem(plausible_event(topic, "p-1"), (topic.key_field,)) is None
    for record in poison_records(topic, "p-1"):
        if record.kind == "undecodable":
            continue
        problem = event_problem(topic.decode(record.value), (topic.key_field,))
        assert problem is not None, record.kind


def test_the_key_of_the_topic_is_required() -> None:
    assert event_problem(ev.GameFinished(), ("game_id",)) == "game_id is empty: the event names no game id"
    assert event_problem(ev.GameFinished(white_id="w")) is None


def test_a_problem_names_the_field_however_deep() -> None:
    event = ev.RoundPaired(tournament_id="t_1", pairings=[
        ev.PairingLine(white_id="a", black_id="b", game_ids=["g1"]),
        ev.PairingLine(white_id="a", black_id="b", game_ids=["g1", "g\x002"])])
    assert event_problem(event) == ('pairings[1].game_ids[1] "g\\x002" holds control or invisible characters;'
                                    " a game id cannot")
    event = ev.GameRequested(game_id="g", opening=cm.Opening(mode=77))
    assert event_problem(event) == "opening.mode is 77, which OpeningMode does not define (in this version)"
    event = ev.GameRequested(game_id="g", opening=cm.Opening(fen="\x00"))
    assert event_problem(event) == "opening.fen holds a NUL character; text cannot"
    event = ev.GameFinished(game_id="g")
    event.finished_at.nanos = -1
    assert event_problem(event) == "finished_at (0 s, -1 ns) is not a date of years 1..9999"


# The reference the compiled checks must agree with: a plain walk over the fields that are set.
def reference_problem(message: Message) -> bool:
    for field, value in message.ListFields():
        values = value if field.is_repeated else (value,)
        for item in values:
            if field.type == FieldDescriptor.TYPE_STRING:
                kind = (COMPETITION_ID if field.name == "id" and message.DESCRIPTOR.name == "CompetitionRef"
                        else EVENT_ID_FIELDS.get(field.name))
                if kind is not None and id_problem(item, kind) is not None:
                    return True
                if kind is None and ("\x00" in item or len(item) > TEXT_MAX_LENGTH):
                    return True
            elif field.type == FieldDescriptor.TYPE_ENUM and item not in field.enum_type.values_by_number:
                return True
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                if field.message_type.full_name == "google.protobuf.Timestamp":
                    if not (-62_135_596_800 <= item.seconds <= 253_402_300_799 and 0 <= item.nanos < 10**9):
                        return True
                elif reference_problem(item):
                    return True
    return False


_texts = st.one_of(st.sampled_from(["", "g1", "p 1", " p", "a,b", "x\x00", "\u202e", "é" * 130]),
                   st.text(max_size=20))
_enums = st.integers(min_value=-3, max_value=20)
_seconds = st.one_of(st.integers(min_value=-2**63, max_value=2**63 - 1),
                     st.integers(min_value=-62_135_596_801, max_value=-62_135_596_799),
                     st.integers(min_value=253_402_300_798, max_value=253_402_300_800))


@st.composite
def finished_events(draw: st.DrawFn) -> ev.GameFinished:
    event = ev.GameFinished(
        game_id=draw(_texts), variant=draw(_texts), white_id=draw(_texts), black_id=draw(_texts),
        speed=draw(_enums), result=draw(_enums), termination=draw(_enums),
        competition=cm.CompetitionRef(kind=draw(_enums), id=draw(_texts), round=draw(st.integers(-5, 5))),
    )
    event.meta.event_id = draw(_texts)
    event.meta.producer = draw(_texts)
    event.finished_at.seconds = draw(_seconds)
    event.finished_at.nanos = draw(st.integers(min_value=-2, max_value=10**9 + 1))
    return event


@st.composite
def requested_events(draw: st.DrawFn) -> ev.GameRequested:
    event = ev.GameRequested(game_id=draw(_texts), white_id=draw(_texts), speed=draw(_enums),
                             opening=cm.Opening(variant=draw(_texts), mode=draw(_enums), moves=draw(_texts)))
    if draw(st.booleans()):
        event.time_control.fischer.base_seconds = draw(st.integers(-5, 5))
    event.requested_at.seconds = draw(_seconds)
    return event


@given(st.one_of(finished_events(), requested_events()))
def test_the_compiled_checks_agree_with_a_plain_walk(event: Message) -> None:
    assert (event_problem(event) is not None) == reference_problem(event)


@given(finished_events())
def test_every_nul_is_caught(event: ev.GameFinished) -> None:
    if nul_field(event) is not None:
        assert event_problem(event) is not None
