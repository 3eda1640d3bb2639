"""Trace ids (arbiter.kit.trace): the rule, the scope of the work in hand, where an event finds its chain."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arbiter.contracts import common_pb2 as cm
from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import ALL_TOPICS, stamp_meta
from arbiter.kit.fields import TRACE_ID_MAX_LENGTH, is_trace_id, trace_id_problem
from arbiter.kit.trace import (
    TRACE_HEADER,
    TraceScope,
    answer_metadata,
    chain_start,
    consumed_trace,
    current_scope,
    current_trace_id,
    enter,
    header_trace,
    leave,
    payload_trace,
    tracing,
    usable_or_new,
)

AT = datetime(2026, 12, 3, 20, 0, tzinfo=UTC)
trace_ids = st.text("abcdefABCDEF0123456789-_.:/+=@", min_size=1, max_size=TRACE_ID_MAX_LENGTH)


# -- the rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    "4bf92f3577b34da6a3ce929d0e0e4736",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "site:req/42+retry=1@eu",
    "t_1a2b3c/created",
    "x" * TRACE_ID_MAX_LENGTH,
])
def test_ids_a_play_site_or_we_make_are_trace_ids(value: str) -> None:
    assert is_trace_id(value) and trace_id_problem(value) is None


@pytest.mark.parametrize(("value", "words"), [
    ("", "is empty"),
    ("x" * (TRACE_ID_MAX_LENGTH + 1), f"has 129 characters; trace ids have at most {TRACE_ID_MAX_LENGTH}"),
    ("a b", "holds characters other than"),
    ("line\nbreak", "holds characters other than"),
    ('quote"d', "holds characters other than"),
    ("café", "holds characters other than"),
    ("a\x00b", "holds characters other than"),
])
def test_anything_else_is_not_and_the_words_say_why(value: str, words: str) -> None:
    assert not is_trace_id(value)
    assert words in (trace_id_problem(value) or "")


def test_a_callers_unusable_trace_id_is_replaced_by_a_fresh_one_and_the_reason_given() -> None:
    assert usable_or_new("play-site-7") == ("play-site-7", None)
    fresh, problem = usable_or_new("two words")
    assert is_trace_id(fresh) and fresh != "two words" and problem is not None and "two words" in problem
    minted, nothing_wrong = usable_or_new("")
    assert is_trace_id(minted) and nothing_wrong is None


def test_a_chain_an_event_starts_is_named_by_its_event_id_when_that_can_be_a_trace_id() -> None:
    assert chain_start("t_42/started") == "t_42/started"
    fresh = chain_start("an event id with spaces")
    assert is_trace_id(fresh) and fresh != chain_start("an event id with spaces")


# -- the scope of the work in hand -------------------------------------------------------------


def test_a_scope_of_one_chain_has_one_id_and_a_batch_of_several_names_each_once_in_order() -> None:
    assert TraceScope(("a",)).single() == "a"
    batch = TraceScope(["b", "a", "b", "c", "a"])
    assert batch.ids == ("b", "a", "c") and batch.single() == ""
    assert TraceScope(["a", "a", "a"]).single() == "a"


def test_in_a_batch_of_several_chains_an_aggregate_finds_the_chain_of_its_last_event_and_keys_are_read_lazily() -> None:
    asked: list[int] = []

    def keys() -> list[str]:
        asked.append(1)
        return ["g1", "g2", "g1"]

    single = TraceScope(["a", "a", "a"], keys)
    assert single.of_key("anything") == "a" and asked == []
    batch = TraceScope(["a", "b", "c"], keys)
    assert (batch.of_key("g1"), batch.of_key("g2"), batch.of_key("g3")) == ("c", "b", "")
    assert asked == [1]
    assert TraceScope(["a", "b"]).of_key("g1") == ""


def test_tracing_sets_the_work_in_hand_for_the_block_and_gives_back_what_was_there() -> None:
    assert current_scope() is None and current_trace_id() == ""
    with tracing("outer"):
        assert current_trace_id() == "outer"
        with tracing("inner"):
            assert current_trace_id() == "inner"
        with tracing(""):
            assert current_scope() is None
        assert current_trace_id() == "outer"
        token = enter(TraceScope(["x", "y"]))
        assert current_trace_id() == "" and current_scope().ids == ("x", "y")  # type: ignore[union-attr]
        leave(token)
        assert current_trace_id() == "outer"
    assert current_scope() is None
    assert answer_metadata() == ()


async def test_work_running_side_by_side_keeps_its_own_chain() -> None:
    seen: dict[str, list[str]] = {"a": [], "b": []}

    async def work(trace: str) -> None:
        with tracing(trace):
            for _ in range(5):
                await asyncio.sleep(0)
                seen[trace].append(current_trace_id())
                assert answer_metadata() == (("x-trace-id", trace),)

    await asyncio.gather(work("a"), work("b"))
    assert seen == {"a": ["a"] * 5, "b": ["b"] * 5}
    assert current_scope() is None


# -- an incoming event's chain -----------------------------------------------------------------


def _finished(event_id: str = "e-1", trace: str = "") -> ev.GameFinished:
    event = ev.GameFinished(game_id="g-1")
    event.meta.event_id = event_id
    event.meta.trace_id = trace
    return event


def test_an_event_is_handled_in_the_chain_its_meta_names_before_its_header() -> None:
    event = _finished(trace="from-meta")
    assert consumed_trace(event, [(TRACE_HEADER, b"from-header")]) == "from-meta"


def test_without_a_usable_meta_trace_id_the_header_names_the_chain_and_the_handler_sees_it_in_the_meta() -> None:
    for meta_trace in ("", "not usable"):
        event = _finished(trace=meta_trace)
        assert consumed_trace(event, [("event-id", b"e-1"), (TRACE_HEADER, b"from-header")]) == "from-header"
        assert event.meta.trace_id == "from-header"


def test_without_either_the_event_starts_its_own_chain() -> None:
    for headers in (None, [], [(TRACE_HEADER, None)], [(TRACE_HEADER, b"\xff\xfe")], [(TRACE_HEADER, b"a b")]):
        event = _finished(event_id="e-7")
        assert consumed_trace(event, headers) == "e-7" == event.meta.trace_id
    unusable_id = _finished(event_id="e 8")
    trace = consumed_trace(unusable_id, None)
    assert is_trace_id(trace) and trace == unusable_id.meta.trace_id


def test_a_header_is_read_only_when_it_is_a_trace_id() -> None:
    assert header_trace([(TRACE_HEADER, b"ok-1")]) == "ok-1"
    assert header_trace([("other", b"x"), (TRACE_HEADER, "é".encode())]) == ""
    assert header_trace(None) == ""


# -- the relay's header, from the payload -------------------------------------------------------


@given(trace=trace_ids, event_id=st.text(min_size=0, max_size=300),
       topic=st.sampled_from(ALL_TOPICS), key=st.text("abc-_0123456789", min_size=1, max_size=40))
def test_the_trace_id_read_from_any_serialized_event_is_the_one_in_its_meta(trace: str, event_id: str, topic,
                                                                            key: str) -> None:
    event = topic.message()
    setattr(event, topic.key_field, key)
    event.meta.event_id = event_id
    event.meta.producer = "pairing"
    event.meta.occurred_at.FromDatetime(AT)
    event.meta.trace_id = trace
    payload = event.SerializeToString()

    assert payload_trace(payload) == trace


def test_a_payload_without_a_usable_trace_id_names_none() -> None:
    assert payload_trace(_finished().SerializeToString()) == ""
    assert payload_trace(_finished(trace="two words").SerializeToString()) == ""
    assert payload_trace(b"") == payload_trace(b"\x12\x03abc") == payload_trace(b"\x0a\xff") == ""
    # A meta whose length runs past the payload, or whose bytes are not a meta.
    assert payload_trace(b"\x0a\x50\x2a\x02ab") == payload_trace(b"\x0a\x02\xff\xff") == ""


# -- a new event's chain --------------------------------------------------------------------------


def test_a_new_event_keeps_its_own_trace_id_then_takes_the_one_given_then_the_work_in_hands() -> None:
    own = ev.GameRequested(game_id="g", meta=cm.EventMeta(trace_id="own"))
    with tracing("call"):
        assert stamp_meta(own, "pairing", AT, trace_id="given").meta.trace_id == "own"
        assert stamp_meta(ev.GameRequested(game_id="g"), "pairing", AT, trace_id="given").meta.trace_id == "given"
        assert stamp_meta(ev.GameRequested(game_id="g"), "pairing", AT).meta.trace_id == "call"


def test_outside_any_work_or_in_a_batch_of_other_aggregates_a_new_event_starts_a_chain_named_by_its_id() -> None:
    alone = ev.TournamentStarted(tournament_id="t_1", meta=cm.EventMeta(event_id="t_1/started"))
    assert stamp_meta(alone, "pairing", AT).meta.trace_id == "t_1/started"
    token = enter(TraceScope(["a", "b"], lambda: ["g-1", "g-2"]))
    try:
        other = ev.RoundPaired(tournament_id="t_1", meta=cm.EventMeta(event_id="t_1/r2"))
        assert stamp_meta(other, "pairing", AT).meta.trace_id == "t_1/r2"
        same_game = ev.ClockState(game_id="g-2", meta=cm.EventMeta(event_id="state:g-2:4"))
        assert stamp_meta(same_game, "clock", AT).meta.trace_id == "b"
    finally:
        leave(token)
