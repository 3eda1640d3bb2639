"""A trace id survives every path an event takes: the outbox and its relay, timers, the set-aside table and its replay.

On the real PostgreSQL and broker: the relay publishes to a topic of the test's own, timers fire
from a schema of the test's own, records are set aside in one and read back as `arbiter
set-aside replay` sends them again.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import ConsumerRecord
from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.events import ALL_TOPICS, topic_named
from arbiter.kit.fields import TRACE_ID_MAX_LENGTH, is_trace_id
from arbiter.kit.kafka import outbox_publisher
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox, OutboxRelay
from arbiter.kit.poison import HANDLER_FAILED, Rejected, StoredSetAside
from arbiter.kit.timers import Timer, TimerPoller, schedule_timer
from arbiter.kit.timesource import TimeSource
from arbiter.kit.trace import TRACE_HEADER, TraceScope, consumed_trace, current_trace_id, enter, leave, tracing
from arbiter_tools.cli.commands.set_aside import COLUMNS, replayed_record
from arbiter_tools.poison import plausible_event


@pytest.fixture
async def kit_schema(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    schema = f"kit_trace_{uuid.uuid4().hex[:8]}"
    pool = await create_pool(database_url, schema, max_size=3)
    await migrate(pool, schema, [])
    try:
        yield pool
    finally:
        await pool.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await pool.close()


# -- the outbox and its relay ---------------------------------------------------------------------


async def test_the_relay_sends_each_events_trace_id_in_its_header_as_its_payload_names_it(
        kit_schema: asyncpg.Pool, infra_env) -> None:
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    tag = uuid.uuid4().hex[:8]
    schema = await kit_schema.fetchval("SELECT current_schema()")
    outbox = Outbox(schema, TimeSource())
    async with kit_schema.acquire() as connection, connection.transaction():
        with tracing(f"{tag}-call"):
            await outbox.add(connection, ev.GameRequested(game_id=f"{tag}-a"))
            await outbox.add(connection, ev.GameRequested(game_id=f"{tag}-b"), trace_id=f"{tag}-given")
        token = enter(TraceScope([f"{tag}-1", f"{tag}-2"], lambda: [f"{tag}-c", f"{tag}-x"]))
        try:
            await outbox.add(connection, ev.GameRequested(game_id=f"{tag}-c"), ev.GameRequested(game_id=f"{tag}-d"))
        finally:
            leave(token)
        # Put in as deploy/README.md puts a set-aside event back: without the copy of its trace id.
        back = ev.GameRequested(game_id=f"{tag}-e")
        back.meta.event_id, back.meta.trace_id = f"{tag}-e/requested", f"{tag}-back"
        await connection.execute(
            "INSERT INTO outbox (topic, key, payload, event_id, event_type) VALUES ($1, $2, $3, $4, $5)",
            "game.requested", back.game_id, back.SerializeToString(), back.meta.event_id, "GameRequested")
    copies = {row["key"]: row["trace_id"] for row in await kit_schema.fetch("SELECT key, trace_id FROM outbox")}
    assert copies[f"{tag}-a"] == f"{tag}-call" and copies[f"{tag}-e"] == ""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        relay = OutboxRelay(kit_schema, schema, outbox_publisher(producer), Metrics(schema))
        assert await relay.relay_once() == 5
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer("game.requested", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=None)
    await consumer.start()
    found: dict[str, tuple[str, bytes | None]] = {}
    try:
        while len(found) < 5:
            for records in (await consumer.getmany(timeout_ms=2000)).values():
                for record in records:
                    if record.key.decode().startswith(tag):
                        event = ev.GameRequested.FromString(record.value)
                        found[event.game_id] = (event.meta.trace_id, dict(record.headers).get(TRACE_HEADER))
    finally:
        await consumer.stop()
    # One chain's call; a trace id given by the caller; in a batch of two chains, the one about the
    # same game, and for another game a chain of its own, named by its event id; a row without the
    # copy of its trace id gets its header from its payload.
    d_trace = found[f"{tag}-d"][0]
    assert found == {
        f"{tag}-a": (f"{tag}-call", f"{tag}-call".encode()),
        f"{tag}-b": (f"{tag}-given", f"{tag}-given".encode()),
        f"{tag}-c": (f"{tag}-1", f"{tag}-1".encode()),
        f"{tag}-d": (d_trace, d_trace.encode()),
        f"{tag}-e": (f"{tag}-back", f"{tag}-back".encode()),
    }
    assert d_trace not in (f"{tag}-1", f"{tag}-2")


# -- stored timers --------------------------------------------------------------------------------


async def test_a_timer_fires_in_the_chain_that_set_it_and_what_it_adds_stays_in_it(kit_schema: asyncpg.Pool) -> None:
    schema = await kit_schema.fetchval("SELECT current_schema()")
    outbox = Outbox(schema, TimeSource())
    due = datetime.now(UTC) - timedelta(seconds=1)
    async with kit_schema.acquire() as connection, connection.transaction():
        with tracing("create-call"):
            await schedule_timer(connection, "t_1/start", "start", due, {"tournament_id": "t_1"})
        await schedule_timer(connection, "t_2/start", "start", due, {"tournament_id": "t_2"})
    fired: dict[str, tuple[str, str]] = {}

    async def on_start(connection: asyncpg.Connection, timer: Timer) -> None:
        event = ev.TournamentStarted(tournament_id=timer.payload["tournament_id"])
        event.meta.event_id = f"{event.tournament_id}/started"
        await outbox.add(connection, event)
        fired[timer.timer_id] = (current_trace_id(), event.meta.trace_id)

    assert await TimerPoller(kit_schema, {"start": on_start}, TimeSource(), Metrics(schema)).fire_due() == 2
    # A timer set outside any chain starts none: each event it adds starts its own.
    assert fired == {"t_1/start": ("create-call", "create-call"), "t_2/start": ("", "t_2/started")}
    assert current_trace_id() == ""


# -- the set-aside table and its replay -----------------------------------------------------------

_offsets = itertools.count()
_CONSUMED = [topic for topic in ALL_TOPICS if topic.name != "clock.state"]
_traces = st.text("abcdef0123456789-_.:/+=@", min_size=1, max_size=TRACE_ID_MAX_LENGTH)
_unusable = st.sampled_from(["", "two words", "x" * (TRACE_ID_MAX_LENGTH + 1), "café"])


@pytest.fixture(scope="module")
def set_aside_schema(database_url: str) -> Iterator[tuple[str, str]]:
    """A schema with the kit's tables for the property's examples, each of which connects on its own loop."""
    schema = f"kit_replay_{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        pool = await create_pool(database_url, schema, max_size=1)
        await migrate(pool, schema, [])
        await pool.close()

    async def drop() -> None:
        connection = await asyncpg.connect(database_url)
        await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await connection.close()

    asyncio.run(create())
    yield database_url, schema
    asyncio.run(drop())


def _record(topic: str, offset: int, value: bytes, headers: list[tuple[str, bytes | None]]) -> ConsumerRecord:
    return ConsumerRecord(topic=topic, partition=0, offset=offset, timestamp=1_700_000_000_000, timestamp_type=0,
                          key=b"k", value=value, checksum=None, serialized_key_size=1,
                          serialized_value_size=len(value), headers=headers)


@settings(max_examples=40, deadline=None)
@given(topic=st.sampled_from(_CONSUMED), meta_trace=st.one_of(_traces, _unusable),
       header=st.one_of(st.none(), _traces.map(str.encode), _unusable.map(str.encode)))
def test_an_event_replayed_from_the_set_aside_table_keeps_its_trace_id(
        set_aside_schema: tuple[str, str], topic, meta_trace: str, header: bytes | None) -> None:
    database_url, schema = set_aside_schema
    event = plausible_event(topic, "replay")
    event.meta.trace_id = meta_trace
    headers = [("event-id", event.meta.event_id.encode()), ("event-type", b"x")]
    if header is not None:
        headers.append((TRACE_HEADER, header))
    original = _record(topic.name, next(_offsets), event.SerializeToString(), headers)
    came_in = consumed_trace(topic.decode(original.value), original.headers)

    async def set_aside_and_read_back() -> asyncpg.Record:
        pool = await create_pool(database_url, schema, max_size=1)
        try:
            await StoredSetAside(pool, Metrics("kit_replay")).put(
                "replay-group", [Rejected(original, HANDLER_FAILED, "RuntimeError: a bug", 3)])
            return await pool.fetchrow(
                f"SELECT {COLUMNS} FROM consumer_set_aside WHERE topic = $1 AND \"offset\" = $2",
                original.topic, original.offset)
        finally:
            await pool.close()

    row = asyncio.run(set_aside_and_read_back())
    replayed_topic, value, _key, replayed_headers = replayed_record(row)
    assert replayed_topic == topic.name and value is not None
    # The replayed record is handled in the chain the original was: the same trace id from its
    # meta or its header, or the same event id starting it.
    assert consumed_trace(topic_named(replayed_topic).decode(value), replayed_headers) == came_in
    if is_trace_id(meta_trace):
        assert came_in == meta_trace
    assert dict(replayed_headers).get(TRACE_HEADER) == header
