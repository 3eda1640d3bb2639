"""Kafka handlers of the openings service: a cancelled tournament's draws are forgotten."""

from __future__ import annotations

import logging

import asyncpg

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.idempotency import delivery_id, first_delivery
from arbiter.kit.timesource import TimeSource
from services.openings import store

log = logging.getLogger(__name__)

CONSUMER = "openings"


class TournamentCancelledHandler:
    """tournament.cancelled: drop the tournament's draws and refuse new ones (its rounds are never played)."""

    def __init__(self, pool: asyncpg.Pool, time_source: TimeSource) -> None:
        self.pool = pool
        self.time_source = time_source

    async def __call__(self, event: ev.TournamentCancelled) -> str:
        """Apply one cancellation once, whatever the number of deliveries."""
        if not event.tournament_id:
            log.warning("tournament.cancelled without a tournament id", extra={"event_id": event.meta.event_id})
            return "ignored"
        async with self.pool.acquire() as connection, connection.transaction():
            event_id = delivery_id(event.meta.event_id, event.tournament_id, events.TOURNAMENT_CANCELLED.name)
            if not await first_delivery(connection, CONSUMER, event_id):
                return "duplicate"
            # Same lock as a draw: no draw of this tournament commits after its cancellation.
            await store.lock_competition(connection, "tournament", event.tournament_id)
            dropped = await store.cancel_competition(
                connection, "tournament", event.tournament_id, event.reason or "no reason given",
                self.time_source.now(),
            )
        log.info("tournament cancelled; draws forgotten",
                 extra={"tournament_id": event.tournament_id, "draws_dropped": dropped})
        return "handled"
