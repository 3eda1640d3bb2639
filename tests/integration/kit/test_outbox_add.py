"""Outbox.add (kit): a few events by one INSERT, many by COPY; either way in order, stamped, notified."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from arbiter.contracts import events_pb2 as ev
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.events import GAME_REQUESTED
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource


@pytest.mark.parametrize("count", [1, 3, 64, 65, 500])
async def test_events_are_saved_in_order_with_their_keys_and_ids(database_url, count: int) -> None:
    schema = f"kit_outbox_{uuid.uuid4().hex[:6]}"
    pool = await create_pool(database_url, schema, max_size=2)
    try:
        await migrate(pool, schema, [])
        outbox = Outbox("outbox-test", TimeSource())
        requests = [ev.GameRequested(game_id=f"g{i:04d}", white_id="w", black_id="b") for i in range(count)]
        for request in requests:
            request.meta.event_id = f"{request.game_id}/requested"
        notified = asyncio.Event()

        def on_notify(*_: object) -> None:
            notified.set()

        async with pool.acquire() as listener:
            await listener.add_listener(f"{schema}_outbox", on_notify)
            async with pool.acquire() as connection, connection.transaction():
                await outbox.add(connection, *requests)
            await asyncio.wait_for(notified.wait(), 5)
            await listener.remove_listener(f"{schema}_outbox", on_notify)
        rows = await pool.fetch("SELECT topic, key, payload, event_id, event_type FROM outbox ORDER BY id")
        assert [row["event_id"] for row in rows] == [f"g{i:04d}/requested" for i in range(count)]
        assert {row["topic"] for row in rows} == {GAME_REQUESTED.name}
        assert [row["key"] for row in rows] == [f"g{i:04d}" for i in range(count)]
        assert {row["event_type"] for row in rows} == {"arbiter.contracts.GameRequested"}
        saved = ev.GameRequested.FromString(rows[-1]["payload"])
        assert saved.game_id == f"g{count - 1:04d}" and saved.meta.producer == "outbox-test"
    finally:
        async with pool.acquire() as connection:
            await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await pool.close()
