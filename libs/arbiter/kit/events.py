"""The topic registry: which protobuf message travels on which topic, keyed by which field."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.trace import chain_start, current_scope, trace_of_key


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


def stamp_meta(event: Message, producer: str, occurred_at: datetime | Timestamp, causation_id: str = "",
               trace_id: str = "") -> Message:
    """Fill what `event.meta` lacks: event id, time, producer, causation and trace ids.

    The trace id, unless given: the one of the work in hand (`arbiter.kit.trace`: the call or
    event this one follows from), else the event's own id, as it starts a chain.
    """
    meta = event.meta  # type: ignore[attr-defined]  # every event has an EventMeta; Message does not say so
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
    if not meta.trace_id:
        meta.trace_id = trace_id or _inherited_trace(event) or chain_start(meta.event_id)
    return event


def _inherited_trace(event: Message) -> str:
    """The trace id the work in hand passes to an event it adds; "" when it passes none."""
    scope = current_scope()
    if scope is None:
        return ""
    trace = scope.single()
    if trace:
        return trace
    topic = _BY_MESSAGE.get(type(event))
    return "" if topic is None else trace_of_key(topic.key_of(event))


# Who may produce each topic: the Kafka user of each service (its service name) and the play site's
# ("play-site"), from what each one publishes (docs/asyncapi/). Brokers that enforce ACLs grant
# Write on a topic to these users only (deploy/kafka/setup.sh).
PLAY_SITE_USER = "play-site"
PRODUCERS: dict[str, frozenset[str]] = {
    GAME_REQUESTED.name: frozenset({"pairing", "arena"}),
    GAME_STARTED.name: frozenset({PLAY_SITE_USER}),
    MOVE_MADE.name: frozenset({PLAY_SITE_USER}),
    PRESENCE_CHANGED.name: frozenset({PLAY_SITE_USER}),
    # T-15 and T-18: pairing scores the games it closes or forfeits itself.
    GAME_FINISHED.name: frozenset({PLAY_SITE_USER, "pairing"}),
    GAME_ABANDONED.name: frozenset({"clock"}),
    CLOCK_FLAGGED.name: frozenset({"clock"}),
    CLOCK_STATE.name: frozenset({"clock"}),
    BOOST_TAKEN.name: frozenset({"arena"}),
    TOURNAMENT_CREATED.name: frozenset({"pairing"}),
    TOURNAMENT_STARTED.name: frozenset({"pairing"}),
    ROUND_PAIRED.name: frozenset({"pairing"}),
    TOURNAMENT_FINISHED.name: frozenset({"pairing"}),
    TOURNAMENT_CANCELLED.name: frozenset({"pairing"}),
    ARENA_CREATED.name: frozenset({"arena"}),
    ARENA_FINISHED.name: frozenset({"arena"}),
    RATING_UPDATED.name: frozenset({"rating"}),
    OPENING_DRAWN.name: frozenset({"openings"}),
}
