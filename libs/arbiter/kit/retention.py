"""Retention: processed-event ids older than any event Kafka could still redeliver are deleted, and so are
published outbox events older than any broker loss they could be sent again for.

`processed_events` grows with every event consumed; an id is only useful while its event
can come again, that is while the topic keeps it. `outbox_published` grows with every event
published; a row is only useful for `arbiter republish` (README.md, "Losing the broker"). Rows are
deleted oldest first in small batches so that a sweep never holds long locks on a busy table.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import asyncpg

from arbiter.kit.metrics import Metrics
from arbiter.kit.pause import pause

log = logging.getLogger(__name__)

_DELETE_BATCH = """
WITH doomed AS (
    SELECT consumer, event_id FROM processed_events
    WHERE processed_at < now() - $1::interval
    ORDER BY processed_at
    LIMIT $2
)
DELETE FROM processed_events p USING doomed d
WHERE p.consumer = d.consumer AND p.event_id = d.event_id
"""

_DELETE_PUBLISHED_BATCH = """
WITH doomed AS (
    SELECT id FROM outbox_published
    WHERE published_at < now() - $1::interval
    ORDER BY published_at
    LIMIT $2
)
DELETE FROM outbox_published o USING doomed d WHERE o.id = d.id
"""


class RetentionSweeper:
    """Deletes processed-event ids older than `retention` and published outbox events older than
    `published_retention`, every `interval_seconds`."""

    def __init__(self, pool: asyncpg.Pool, metrics: Metrics, retention: timedelta, interval_seconds: float,
                 batch_size: int = 5000, published_retention: timedelta = timedelta(hours=24)) -> None:
        if retention <= timedelta(0) or interval_seconds <= 0 or batch_size < 1:
            raise ValueError("retention, interval and batch size must be positive")
        self.pool = pool
        self.metrics = metrics
        self.retention = retention
        self.published_retention = published_retention
        self.interval_seconds = interval_seconds
        self.batch_size = batch_size
        self.deleted = metrics.counter(
            "arbiter_retention_deleted_total", "Rows deleted because they outlived their retention", ("table",),
            known=[("processed_events",), ("outbox_published",)])

    async def sweep_once(self) -> int:
        """Delete every expired row, a batch per transaction; return how many went."""
        return (await self._sweep("processed_events", _DELETE_BATCH, self.retention)
                + await self._sweep("outbox_published", _DELETE_PUBLISHED_BATCH, self.published_retention))

    async def _sweep(self, table: str, statement: str, retention: timedelta) -> int:
        total = 0
        while True:
            async with self.pool.acquire() as connection:
                status = await connection.execute(statement, retention, self.batch_size)
            count = int(status.rsplit(" ", 1)[-1])
            total += count
            if count:
                self.deleted.labels(self.metrics.service, table).inc(count)
            if count < self.batch_size:
                return total

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep at start and then every interval until `stop`."""
        while not stop.is_set():
            try:
                deleted = await self.sweep_once()
                if deleted:
                    log.info("retention sweep", extra={"deleted": deleted})
            except (OSError, asyncpg.PostgresError):
                # A database hiccup only delays the next sweep; the table is merely larger meanwhile.
                log.warning("retention sweep failed; retrying at the next interval", exc_info=True)
            await pause(stop, self.interval_seconds)
