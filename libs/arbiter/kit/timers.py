"""Stored timers: due instants kept in PostgreSQL and fired by a poller, late rather than never."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from arbiter.kit.db import Connection
from arbiter.kit.metrics import Metrics
from arbiter.kit.pause import pause
from arbiter.kit.timesource import TimeSource
from arbiter.kit.trace import TraceScope, current_trace_id, enter, leave

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timer:
    """A due action: what kind, when, with which payload, for which chain (its trace id, "" for none)."""

    timer_id: str
    kind: str
    due_at: datetime
    payload: dict[str, Any]
    trace_id: str = ""


TimerHandler = Callable[[Connection, Timer], Awaitable[None]]


async def schedule_timer(
    connection: Connection, timer_id: str, kind: str, due_at: datetime, payload: Mapping[str, Any] | None = None
) -> None:
    """Store a timer (inside the caller's transaction); re-arming an unfired timer moves it.

    The timer keeps the trace id of the work in hand: what it does when it fires is part of the same chain.
    """
    await connection.execute(
        "INSERT INTO timers (timer_id, kind, due_at, payload, trace_id) VALUES ($1, $2, $3, $4, $5)"
        " ON CONFLICT (timer_id) DO UPDATE SET due_at = EXCLUDED.due_at, payload = EXCLUDED.payload,"
        " trace_id = EXCLUDED.trace_id WHERE timers.fired_at IS NULL",
        timer_id, kind, due_at, dict(payload or {}), current_trace_id(),
    )


async def cancel_timer(connection: Connection, timer_id: str) -> None:
    """Drop a timer that has not fired."""
    await connection.execute("DELETE FROM timers WHERE timer_id = $1 AND fired_at IS NULL", timer_id)


class TimerPoller:
    """Fires due timers, each in its own transaction with its effects; replicas never fire one twice."""

    def __init__(
        self, pool: asyncpg.Pool, handlers: Mapping[str, TimerHandler], time_source: TimeSource,
        metrics: Metrics, poll_seconds: float = 0.2, batch_size: int = 100,
    ) -> None:
        self.pool = pool
        self.handlers = dict(handlers)
        self.time_source = time_source
        metrics.expect_timers(self.handlers)
        self.metrics = metrics
        self.poll_seconds = poll_seconds
        self.batch_size = batch_size

    async def fire_due(self) -> int:
        """Fire every timer due now; return how many fired."""
        fired = 0
        while True:
            async with self.pool.acquire() as connection:
                ids = await connection.fetch(
                    "SELECT timer_id FROM timers WHERE fired_at IS NULL AND due_at <= $1 ORDER BY due_at LIMIT $2",
                    self.time_source.now(), self.batch_size,
                )
                for row in ids:
                    fired += await self._fire_one(connection, row["timer_id"])
            if len(ids) < self.batch_size:
                return fired

    async def _fire_one(self, connection: Connection, timer_id: str) -> int:
        # The timer's work, and a failure's log line, belong to the chain that set it.
        token = None
        try:
            async with connection.transaction():
                row = await connection.fetchrow(
                    "SELECT timer_id, kind, due_at, payload, trace_id FROM timers"
                    " WHERE timer_id = $1 AND fired_at IS NULL FOR UPDATE SKIP LOCKED",
                    timer_id,
                )
                if row is None:
                    return 0
                timer = Timer(row["timer_id"], row["kind"], row["due_at"], row["payload"], row["trace_id"])
                if timer.trace_id:
                    token = enter(TraceScope((timer.trace_id,)))
                handler = self.handlers.get(timer.kind)
                if handler is None:
                    raise LookupError(f"no handler for timer kind {timer.kind!r}")
                await handler(connection, timer)
                await connection.execute(
                    "UPDATE timers SET fired_at = $2 WHERE timer_id = $1", timer_id, self.time_source.now()
                )
        except Exception:
            self.metrics.errors.labels(self.metrics.service, "timer").inc()
            log.exception("timer failed, will retry", extra={"timer_id": timer_id})
            return 0
        finally:
            if token is not None:
                leave(token)
        self.metrics.timers_fired.labels(self.metrics.service, timer.kind).inc()
        return 1

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until `stop` is set."""
        while not stop.is_set():
            try:
                await self.fire_due()
            except (OSError, asyncpg.PostgresError) as error:
                self.metrics.errors.labels(self.metrics.service, "timer_poll").inc()
                log.warning("timer poll failed, retrying", extra={"error": repr(error)})
            await pause(stop, self.poll_seconds)
