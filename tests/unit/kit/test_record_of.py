"""A stamped event becomes a record for the batch publisher: its topic, key, bytes, id and type."""

from __future__ import annotations

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.outbox import record_of


def test_a_stamped_event_keeps_its_topic_key_id_and_bytes() -> None:
    event = ev.GameFinished(game_id="g-1", white_id="w", black_id="b")
    event.meta.event_id = "g-1/finished"

    record = record_of(event)

    assert (record.id, record.topic, record.key) == (0, events.GAME_FINISHED.name, "g-1")
    assert (record.event_id, record.event_type) == ("g-1/finished", "arbiter.contracts.GameFinished")
    assert events.GAME_FINISHED.decode(record.payload) == event
