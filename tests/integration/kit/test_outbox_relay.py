"""The outbox relay on real PostgreSQL: one relay per schema publishes, in table order; another takes over.

The publisher here records what it is given: the relay's contract with Kafka is a batch publisher
(tested on the real broker in test_outbox_publisher); what is tested here is the relay's use of the
table and of the schema's advisory lock.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.events import Topic
from arbiter.kit.kafka import ensure_topics, outbox_publisher
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox, OutboxRecord, OutboxRelay, UnpublishableEvent
from arbiter.kit.timesource import TimeSource
from tests.support.polling import eventually


class Recorder:
    """A batch publisher that keeps every record it was given, by relay."""

    def __init__(self) -> None:
        self.published: list[tuple[str, OutboxRecord]] = []

    def publisher(self, relay_name: str):
        async def publish(records: Sequence[OutboxRecord]) -> None:
            self.published.extend((relay_name, record) for record in records)

        return publish


@dataclass
class Table:
    """A schema of its own with the kit's outbox table, and what adds to it."""

    pool: asyncpg.Pool
    schema: str
    outbox: Outbox


@pytest.fixture
async def table(database_url: str) -> AsyncIterator[Table]:
    schema = f"kit_relay_{uuid.uuid4().hex[:8]}"
    pool = await create_pool(database_url, schema)
    await migrate(pool, schema, [])
    try:
        yield Table(pool, schema, Outbox(schema, TimeSource()))
    finally:
        await pool.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await pool.close()


async def add_events(pool, outbox: Outbox, game_ids: Sequence[str]) -> None:
    async with pool.acquire() as connection, connection.transaction():
        await outbox.add(connection, *(ev.GameRequested(game_id=game_id) for game_id in game_ids))


@asynccontextmanager
async def running(relay: OutboxRelay) -> AsyncIterator[asyncio.Task[None]]:
    """The relay's run loop as a task, stopped and awaited on the way out."""
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    try:
        yield task
    finally:
        stop.set()
        await task


async def lock_holders(pool, schema: str) -> list[int]:
    return [row["pid"] for row in await pool.fetch(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND objid = hashtext($1)::oid", f"arbiter-outbox:{schema}")]


async def test_one_relay_publishes_in_table_order_and_another_takes_over_when_it_stops(table: Table) -> None:
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    relays = {name: OutboxRelay(pool, schema, recorder.publisher(name), Metrics(schema), batch_size=7,
                                poll_seconds=0.2) for name in ("a", "b")}
    stops = {name: asyncio.Event() for name in relays}
    tasks = {name: asyncio.create_task(relay.run(stops[name])) for name, relay in relays.items()}
    try:
        first = [f"g-{i}" for i in range(30)]
        for start in range(0, len(first), 5):
            await add_events(pool, outbox, first[start:start + 5])
        await eventually(lambda: len(recorder.published) == len(first))
        holders = {name for name, _ in recorder.published}
        assert len(holders) == 1, "two relays of one schema published at the same time"
        assert [record.key for _, record in recorder.published] == first
        assert len(await lock_holders(pool, schema)) == 1
        assert await pool.fetchval("SELECT count(*) FROM outbox") == 0

        # The holder stops: the other one takes the lock at its next poll and carries on.
        [holder] = holders
        stops[holder].set()
        await tasks[holder]
        second = [f"h-{i}" for i in range(10)]
        await add_events(pool, outbox, second)
        await eventually(lambda: len(recorder.published) == len(first) + len(second))
        assert {name for name, _ in recorder.published[len(first):]} == set(relays) - {holder}
        assert [record.key for _, record in recorder.published[len(first):]] == second
    finally:
        for stop in stops.values():
            stop.set()
        await asyncio.gather(*tasks.values())


async def test_a_relay_whose_connection_is_killed_reconnects_and_loses_nothing(table: Table) -> None:
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    metrics = Metrics(schema)
    relay = OutboxRelay(pool, schema, recorder.publisher("a"), metrics, poll_seconds=0.2)
    async with running(relay):
        await add_events(pool, outbox, ["g-1"])
        await eventually(lambda: len(recorder.published) == 1)
        # Killed between publishing g-1 and deleting it, the relay would rightly publish it again
        # (at least once): the kill waits for the delete, so that exactly three come out.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while await pool.fetchval("SELECT count(*) FROM outbox"):
            assert loop.time() < deadline, "g-1 was never deleted"
            await asyncio.sleep(0.02)
        [pid] = await lock_holders(pool, schema)
        assert await pool.fetchval("SELECT pg_terminate_backend($1)", pid)
        await add_events(pool, outbox, ["g-2", "g-3"])
        await eventually(lambda: len(recorder.published) == 3)
        assert [record.key for _, record in recorder.published] == ["g-1", "g-2", "g-3"]
        new_holders = await lock_holders(pool, schema)
        assert len(new_holders) == 1 and new_holders != [pid]
        assert metrics.registry.get_sample_value(
            "arbiter_errors_total", {"service": schema, "kind": "outbox_relay"}) >= 1


async def test_a_broker_that_fails_is_waited_for_and_nothing_is_lost(table: Table) -> None:
    """aiokafka's errors (a timeout, a lost connection) do not end the relay, and so the service."""
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    failures = [KafkaTimeoutError(), KafkaConnectionError("broker gone")]

    async def flaky(records: Sequence[OutboxRecord]) -> None:
        if failures:
            raise failures.pop(0)
        await recorder.publisher("a")(records)

    metrics = Metrics(schema)
    relay = OutboxRelay(pool, schema, flaky, metrics, poll_seconds=0.1)
    async with running(relay) as task:
        await add_events(pool, outbox, ["g-1", "g-2"])
        await eventually(lambda: len(recorder.published) == 2)
        assert not task.done()
        assert [record.key for _, record in recorder.published] == ["g-1", "g-2"]
        assert metrics.registry.get_sample_value(
            "arbiter_errors_total", {"service": schema, "kind": "outbox_relay"}) == 2


async def test_relay_once_publishes_only_while_no_running_relay_holds_the_lock(table: Table) -> None:
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    single = OutboxRelay(pool, schema, recorder.publisher("single"), Metrics(schema))
    runner = OutboxRelay(pool, schema, recorder.publisher("runner"), Metrics(schema), poll_seconds=0.2)
    await add_events(pool, outbox, ["g-1"])
    assert await single.relay_once() == 1
    assert await lock_holders(pool, schema) == []  # relay_once gives the lock back
    async with running(runner):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not await lock_holders(pool, schema):
            assert loop.time() < deadline, "the running relay never took the lock"
            await asyncio.sleep(0.05)
        await add_events(pool, outbox, ["g-2"])
        assert await single.relay_once() == 0
        await eventually(lambda: len(recorder.published) == 2)
        assert [(name, record.key) for name, record in recorder.published] == [("single", "g-1"), ("runner", "g-2")]


def pending_gauge(metrics: Metrics, service: str) -> float | None:
    return metrics.registry.get_sample_value("arbiter_outbox_pending", {"service": service})


async def test_the_pending_gauge_counts_what_waits_on_the_holder_and_on_the_others(table: Table) -> None:
    """arbiter_outbox_pending: a backlog left after a pass, and the table seen by a replica without the lock."""
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    metrics = Metrics(schema)
    single = OutboxRelay(pool, schema, recorder.publisher("single"), metrics, batch_size=7)
    await add_events(pool, outbox, [f"g-{i}" for i in range(20)])
    assert await single.relay_once() == 7
    assert pending_gauge(metrics, schema) == 13
    assert await single.relay_once() == 7
    assert pending_gauge(metrics, schema) == 6
    assert await single.relay_once() == 6
    assert pending_gauge(metrics, schema) == 0

    # Another session holds the lock: a running relay that cannot take it still reports the table.
    waiting_metrics = Metrics(schema)
    waiting = OutboxRelay(pool, schema, recorder.publisher("waiting"), waiting_metrics, poll_seconds=0.1)
    holder = await pool.acquire()
    try:
        assert await holder.fetchval("SELECT pg_try_advisory_lock(hashtext($1))", f"arbiter-outbox:{schema}")
        await add_events(pool, outbox, ["h-1", "h-2", "h-3"])
        async with running(waiting):
            await eventually(lambda: pending_gauge(waiting_metrics, schema) == 3)
            assert len(recorder.published) == 20
            await holder.execute("SELECT pg_advisory_unlock(hashtext($1))", f"arbiter-outbox:{schema}")
            await eventually(lambda: len(recorder.published) == 23)
            await eventually(lambda: pending_gauge(waiting_metrics, schema) == 0)
    finally:
        await pool.release(holder)


async def test_a_relay_that_cannot_give_the_lock_back_closes_its_connection(table: Table) -> None:
    """The pool keeps sessions as they are: a connection still holding the lock must not go back to it."""
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()
    relay = OutboxRelay(pool, schema, recorder.publisher("a"), Metrics(schema), poll_seconds=0.1)

    async def failing_unlock(connection: asyncpg.Connection) -> None:
        raise asyncpg.InterfaceError("unlock lost")

    relay._unlock = failing_unlock  # type: ignore[method-assign]
    await add_events(pool, outbox, ["g-1"])
    with pytest.raises(asyncpg.InterfaceError):
        await relay.relay_once()
    async with running(relay):
        await add_events(pool, outbox, ["g-2"])
        await eventually(lambda: len(recorder.published) == 2)
    # Both connections that held the lock were closed instead of returned with it: nobody holds it now.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while await lock_holders(pool, schema):
        assert loop.time() < deadline, "a closed relay connection still holds the schema's lock"
        await asyncio.sleep(0.05)


async def set_aside_rows(pool) -> list[asyncpg.Record]:
    return await pool.fetch("SELECT id, key, event_id, reason FROM outbox_set_aside ORDER BY id")


async def test_an_event_kafka_can_never_take_is_set_aside_and_the_later_ones_still_go_out(table: Table) -> None:
    """Retried forever it would hold back every later event of the service (and end the relay, hence the service)."""
    pool, schema, outbox = table.pool, table.schema, table.outbox
    recorder = Recorder()

    broker_takes_it = False

    async def refusing_g3(records: Sequence[OutboxRecord]) -> None:
        # Like the Kafka publisher: what comes before the refused record may be out already.
        for index, record in enumerate(records):
            if record.key == "g-3" and not broker_takes_it:
                await recorder.publisher("a")(records[:index])
                raise UnpublishableEvent(record, "70000 bytes, more than a whole producer batch")
        await recorder.publisher("a")(records)

    metrics = Metrics(schema)
    relay = OutboxRelay(pool, schema, refusing_g3, metrics, poll_seconds=0.1)
    async with running(relay) as task:
        await add_events(pool, outbox, ["g-1", "g-2", "g-3", "g-4", "g-5"])
        await eventually(lambda: "g-5" in {record.key for _, record in recorder.published})
        assert not task.done()
    keys = [record.key for _, record in recorder.published]
    assert list(dict.fromkeys(keys)) == ["g-1", "g-2", "g-4", "g-5"]
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0
    [aside] = await set_aside_rows(pool)
    assert aside["key"] == "g-3" and aside["event_id"]
    assert aside["reason"] == "70000 bytes, more than a whole producer batch"
    assert metrics.registry.get_sample_value(
        "arbiter_outbox_set_aside_total", {"service": schema, "topic": "game.requested"}) == 1

    # The operator's look and way back (deploy/README.md), once the broker takes it: the relay sends it.
    [looked_at] = await pool.fetch(documented_sql("To look at them").replace("<schema>", f'"{schema}"'))
    assert (looked_at["key"], looked_at["reason"]) == ("g-3", aside["reason"])
    broker_takes_it = True
    await pool.execute(documented_sql("send them again").replace("<schema>", f'"{schema}"'))
    assert await set_aside_rows(pool) == []
    assert await OutboxRelay(pool, schema, refusing_g3, metrics).relay_once() == 1
    assert recorder.published[-1][1].key == "g-3"


def documented_sql(after: str) -> str:
    """The first SQL block of deploy/README.md after the words `after`."""
    text = (Path(__file__).resolve().parents[3] / "deploy" / "README.md").read_text()
    return text[text.index(after):].split("```sql\n", 1)[1].split("```", 1)[0]


async def test_the_kafka_publisher_refuses_an_event_larger_than_a_batch_and_the_relay_sets_it_aside(
    table: Table, infra_env: dict[str, str],
) -> None:
    pool, schema = table.pool, table.schema
    bootstrap = infra_env["KAFKA_BOOTSTRAP_SERVERS"]
    topic = f"kit.set_aside.{uuid.uuid4().hex[:8]}"
    await ensure_topics(bootstrap, 1, [Topic(topic, ev.GameRequested, "game_id")])
    sizes = {"small-1": 100, "huge": 40_000, "small-2": 100, "small-3": 9_000}
    await pool.executemany(
        "INSERT INTO outbox (topic, key, payload, event_id, event_type) VALUES ($1, $2, $3, $4, 'Test')",
        [(topic, key, bytes(size), f"e-{key}") for key, size in sizes.items()],
    )
    # Batches of up to 16 KiB; the broker takes 20,000 bytes: only the huge one alone is too large.
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_batch_size=16 * 1024)
    await producer.start()
    metrics = Metrics(schema)
    try:
        assert await OutboxRelay(pool, schema, outbox_publisher(producer, 20_000), metrics).relay_once() == 3
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None)
    await consumer.start()
    seen: list[str] = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while "small-3" not in seen:
            assert loop.time() < deadline, f"only {seen} arrived"
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                seen.extend(message.key.decode() for message in batch)
    finally:
        await consumer.stop()
    # small-1 may go out twice (once before the huge one was refused, once after): never the huge one.
    assert list(dict.fromkeys(seen)) == ["small-1", "small-2", "small-3"]
    [aside] = await set_aside_rows(pool)
    assert (aside["key"], aside["event_id"]) == ("huge", "e-huge")
    assert aside["reason"].startswith("a record batch of 401") and "KAFKA_MAX_MESSAGE_BYTES 20000" in aside["reason"]
    assert await pool.fetchval("SELECT count(*) FROM outbox") == 0
    assert metrics.registry.get_sample_value("arbiter_outbox_set_aside_total", {"service": schema, "topic": topic}) == 1
