"""stamp_meta fills what an event's meta lacks, at an instant given as a datetime or as a Timestamp."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.events import datetime_of, stamp_meta, timestamp

instants = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC))


@given(instants)
def test_an_instant_stamps_the_same_as_a_datetime_or_as_its_timestamp(instant: datetime) -> None:
    by_datetime = stamp_meta(ev.GameRequested(game_id="g"), "pairing", instant)
    by_timestamp = stamp_meta(ev.GameRequested(game_id="g"), "pairing", timestamp(instant))

    assert by_datetime.meta.occurred_at == by_timestamp.meta.occurred_at
    assert datetime_of(by_timestamp.meta.occurred_at) == instant


def test_what_is_set_already_stays_and_the_rest_is_filled() -> None:
    event = ev.GameRequested(game_id="g")
    event.meta.event_id = "g/requested"
    shared = timestamp(datetime(2026, 12, 3, 20, 0, tzinfo=UTC))

    stamp_meta(event, "pairing", shared, causation_id="cause")
    stamp_meta(event, "other", timestamp(datetime(2027, 1, 1, tzinfo=UTC)), causation_id="other cause")

    assert (event.meta.event_id, event.meta.producer, event.meta.causation_id) == ("g/requested", "pairing", "cause")
    assert event.meta.occurred_at == shared
    # The shared Timestamp is copied, never bound: stamping another event later cannot move this one's.
    shared.seconds += 60
    assert event.meta.occurred_at != shared


def test_an_event_without_an_id_gets_a_fresh_one_each_time() -> None:
    first = stamp_meta(ev.GameRequested(), "pairing", datetime(2026, 12, 3, tzinfo=UTC))
    second = stamp_meta(ev.GameRequested(), "pairing", datetime(2026, 12, 3, tzinfo=UTC))

    assert first.meta.event_id and second.meta.event_id and first.meta.event_id != second.meta.event_id
