"""The topic registry: which protobuf message travels on which topic, keyed by which field."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.contracts import events_pb2 as ev


@dataclass(frozen=True)
class Topic:
    """A Kafka topic carrying one event type, keyed by its aggregate id."""

    name: str
    message: type[Message]
    key_field: str

    def key_of(self, event: Message) -> str:
        """The record key: the event's aggregate id."""
        return str(getattr(event, self.key_field))

    def decode(self, payload: bytes) -> Message:
        """Parse a record value into this topic's message."""
        event = self.message()
        event.ParseFromString(payload)
        return event


GAME_REQUESTED = Topic("game.requested", ev.GameRequested, "game_id")
GAME_STARTED = Topic("game.started", ev.GameStarted, "game_id")
MOVE_MADE = Topic("game.move_made", ev.MoveMade, "game_id")
PRESENCE_CHANGED = Topic("game.presence_changed", ev.PlayerPresenceChanged, "game_id")
GAME_FINISHED = Topic("game.finished", ev.GameFinished, "game_id")
GAME_ABANDONED = Topic("game.abandoned", ev.GameAbandoned, "game_id")
CLOCK_FLAGGED = Topic("clock.flagged", ev.ClockFlagged, "game_id")
CLOCK_STATE = Topic("clock.state", ev.ClockState, "game_id")
BOOST_TAKEN = Topic("arena.boost_taken", ev.BoostTaken, "game_id")
TOURNAMENT_CREATED = Topic("tournament.created", ev.TournamentCreated, "tournament_id")
TOURNAMENT_STARTED = Topic("tournament.started", ev.TournamentStarted, "tournament_id")
ROUND_PAIRED = Topic("tournament.round_paired", ev.RoundPaired, "tournament_id")
TOURNAMENT_FINISHED = Topic("tournament.finished", ev.TournamentFinished, "tournament_id")
TOURNAMENT_CANCELLED = Topic("tournament.cancelled", ev.TournamentCancelled, "tournament_id")
ARENA_CREATED = Topic("arena.created", ev.ArenaCreated, "arena_id")
ARENA_FINISHED = Topic("arena.finished", ev.ArenaFinished, "arena_id")
RATING_UPDATED = Topic("rating.updated", ev.RatingUpdated, "player_id")
OPENING_DRAWN = Topic("opening.drawn", ev.OpeningDrawn, "competition_id")

ALL_TOPICS: tuple[Topic, ...] = (
    GAME_REQUESTED, GAME_STARTED, MOVE_MADE, PRESENCE_CHANGED, GAME_FINISHED, GAME_ABANDONED,
    CLOCK_FLAGGED, CLOCK_STATE, BOOST_TAKEN, TOURNAMENT_CREATED, TOURNAMENT_STARTED, ROUND_PAIRED,
    TOURNAMENT_FINISHED, TOURNAMENT_CANCELLED, ARENA_CREATED, ARENA_FINISHED, RATING_UPDATED,
    OPENING_DRAWN,
)
_BY_NAME = {topic.name: topic for topic in ALL_TOPICS}
_BY_MESSAGE = {topic.message: topic for topic in ALL_TOPICS}


class UnknownTopicError(ValueError):
    """No topic is registered for that name or message type."""


def topic_named(name: str) -> Topic:
    """The registered topic called `name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownTopicError(f"unknown topic {name!r}") from None


def topic_of(event: Message) -> Topic:
    """The registered topic for the type of `event`."""
    try:
        return _BY_MESSAGE[type(event)]
    except KeyError:
        raise UnknownTopicError(f"no topic carries {type(event).__name__}") from None


def event_type_of(event: Message) -> str:
    """The `event-type` header every publisher sends with `event`: its full protobuf name."""
    return event.DESCRIPTOR.full_name


def new_event_id() -> str:
    """A fresh, globally unique event id."""
    return uuid.uuid4().hex


def timestamp(instant: datetime) -> Timestamp:
    """A protobuf Timestamp for an aware datetime."""
    stamp = Timestamp()
    stamp.FromDatetime(instant)
    return stamp


def datetime_of(stamp: Timestamp) -> datetime | None:
    """A Timestamp as an aware UTC datetime; None when none can hold it (outside years 1..9999, bad nanos).

    Without Timestamp.ToDatetime's generic time zone conversion: consumers read one per event.
    """
    seconds, nanos = stamp.seconds, stamp.nanos
    if not (_FIRST_SECOND <= seconds <= _LAST_SECOND and 0 <= nanos < 1_000_000_000):
        return None
    return _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A datetime's range, 0001-01-01 .. 9999-12-31, in seconds from the epoch.
_FIRST_SECOND, _LAST_SECOND = -62_135_596_800, 253_402_300_799


def stamp_meta(event: Message, producer: str, occurred_at: datetime | Timestamp, causation_id: str = "") -> Message:
    """Fill `event.meta` (event id, time, producer) unless an event id is already set."""
    meta = event.meta  # type: ignore[attr-defined]
    if not meta.event_id:
        meta.event_id = new_event_id()
    if not meta.HasField("occurred_at"):
        # A caller stamping many events at one instant converts it once: the conversion cost
        # more than the rest of the stamp.
        meta.occurred_at.CopyFrom(occurred_at if isinstance(occurred_at, Timestamp) else timestamp(occurred_at))
    if not meta.producer:
        meta.producer = producer
    if causation_id and not meta.causation_id:
        meta.causation_id = causation_id
    return event
