"""Published outbox events are kept, put back by `republish` and `arbiter republish`, and swept after their time
(issue 40: after a memory broker is lost, what our outboxes had published can be sent again)."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg

from arbiter.kit.db import create_pool, migrate
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import OutboxRecord, OutboxRelay, republish
from arbiter.kit.retention import RetentionSweeper
from arbiter_tools.cli.main import main
from arbiter_tools.devstack.infra import create_database, drop_database


async def put_in_outbox(connection: asyncpg.Connection, count: int, tag: str) -> list[str]:
    ids = [f"{tag}-{i}" for i in range(count)]
    await connection.executemany(
        "INSERT INTO outbox (topic, key, payload, event_id, event_type) VALUES ($1, $2, $3, $4, 'GameRequested')",
        [("game.requested" if i % 2 else "rating.updated", f"k{i % 3}", b"payload", event_id)
         for i, event_id in enumerate(ids)])
    return ids


def recording(into: list[OutboxRecord]):
    async def publish(records):
        into.extend(records)
    return publish


async def test_published_events_are_kept_put_back_in_order_and_published_again(kit_pool) -> None:
    published: list[OutboxRecord] = []
    relay = OutboxRelay(kit_pool, "kit-republish", recording(published), Metrics("kit-republish"))
    async with kit_pool.acquire() as connection:
        before = await put_in_outbox(connection, 3, "before")
        await relay.relay_once()
        since = await connection.fetchval("SELECT now()")
        after = await put_in_outbox(connection, 4, "after")
        await relay.relay_once()
        assert await connection.fetchval("SELECT count(*) FROM outbox") == 0
        assert await connection.fetchval("SELECT count(*) FROM outbox_published") == 7

        counts = await republish(connection, since)
        assert counts == {"game.requested": 2, "rating.updated": 2}
        assert [r["event_id"] for r in await connection.fetch("SELECT event_id FROM outbox ORDER BY id")] == after
        # Those published before `since` stay where they are; the ones put back leave until published again.
        assert {r["event_id"] for r in await connection.fetch("SELECT event_id FROM outbox_published")} == set(before)
    published.clear()
    await relay.relay_once()
    assert [record.event_id for record in published] == after
    async with kit_pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM outbox_published") == 7


async def test_a_relay_told_to_keep_nothing_deletes_and_the_sweep_deletes_what_outlived_its_time(kit_pool) -> None:
    async with kit_pool.acquire() as connection:
        await put_in_outbox(connection, 2, "forgotten")
        await OutboxRelay(kit_pool, "kit-republish", recording([]), Metrics("kit-republish"),
                          keep_published=False).relay_once()
        assert await connection.fetchval("SELECT count(*) FROM outbox_published") == 0
        await put_in_outbox(connection, 5, "kept")
        await OutboxRelay(kit_pool, "kit-republish", recording([]), Metrics("kit-republish")).relay_once()
        await connection.execute(
            "UPDATE outbox_published SET published_at = now() - interval '25 hours' WHERE event_id < 'kept-3'")
    metrics = Metrics("kit-republish")
    sweeper = RetentionSweeper(kit_pool, metrics, timedelta(days=8), 60, published_retention=timedelta(hours=24))
    assert await sweeper.sweep_once() == 3
    async with kit_pool.acquire() as connection:
        assert {r["event_id"] for r in await connection.fetch("SELECT event_id FROM outbox_published")} == {
            "kept-3", "kept-4"}
    assert metrics.registry.get_sample_value(
        "arbiter_retention_deleted_total", {"service": "kit-republish", "table": "outbox_published"}) == 3


async def _two_services_published(url: str) -> None:
    """rating and pairing schemas, each with events published an hour ago or less, one of each two hours ago."""
    for schema, count in (("rating", 3), ("pairing", 2)):
        pool = await create_pool(url, schema, max_size=1)
        try:
            await migrate(pool, schema, [])
            async with pool.acquire() as connection:
                await put_in_outbox(connection, count, schema)
            await OutboxRelay(pool, schema, recording([]), Metrics(schema)).relay_once()
            async with pool.acquire() as connection:
                await connection.execute("UPDATE outbox_published SET published_at = now() - interval '2 hours'"
                                         " WHERE event_id LIKE '%-0'")
        finally:
            await pool.close()


def test_arbiter_republish_puts_back_each_services_events_and_says_how_many(database_url, capsys) -> None:
    database = f"arbiter_republish_{uuid.uuid4().hex[:8]}"
    url = asyncio.run(create_database(database_url, database))
    try:
        asyncio.run(_two_services_published(url))
        assert main(["republish", "--minutes", "60", "--json", "--database-url", url]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["events"] == 3
        assert report["by_service"] == {"pairing": {"game.requested": 1},
                                        "rating": {"game.requested": 1, "rating.updated": 1}}
        since = (datetime.now(UTC) - timedelta(hours=3)).isoformat()
        assert main(["republish", "--since", since, "--service", "pairing", "--database-url", url]) == 0
        assert "1 events published since" in capsys.readouterr().out
        assert main(["republish", "--minutes", "0", "--database-url", url]) == 2
    finally:
        asyncio.run(drop_database(database_url, database))
