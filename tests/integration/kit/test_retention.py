"""Retention of processed-event ids (kit): old ids go in batches, recent ones stay, the metric counts them."""

from __future__ import annotations

from datetime import timedelta

from arbiter.kit.idempotency import first_deliveries
from arbiter.kit.metrics import Metrics
from arbiter.kit.retention import RetentionSweeper


async def test_old_ids_are_deleted_and_recent_ones_kept(kit_pool) -> None:
    async with kit_pool.acquire() as connection:
        fresh = await first_deliveries(connection, "c", [f"old-{i}" for i in range(25)] + ["new-1", "new-2"])
        assert len(fresh) == 27
        await connection.execute(
            "UPDATE processed_events SET processed_at = now() - interval '9 days' WHERE event_id LIKE 'old-%'")
    metrics = Metrics("retention-test")
    sweeper = RetentionSweeper(kit_pool, metrics, timedelta(days=8), interval_seconds=60, batch_size=10)
    assert await sweeper.sweep_once() == 25  # three batches: 10, 10, 5
    assert await sweeper.sweep_once() == 0
    async with kit_pool.acquire() as connection:
        left = {r["event_id"] for r in await connection.fetch("SELECT event_id FROM processed_events")}
        assert left == {"new-1", "new-2"}
        # A deleted id is old enough that Kafka no longer holds its event; a kept one still dedupes.
        assert await first_deliveries(connection, "c", ["new-1"]) == set()
    assert metrics.registry.get_sample_value(
        "arbiter_retention_deleted_total", {"service": "retention-test", "table": "processed_events"}) == 25
