"""Idempotence: consumers store an event's id in the same transaction as its effect; creates are keyed by request id."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from arbiter.kit.db import Connection
from arbiter.kit.errors import FailedPrecondition
from arbiter.kit.fields import REQUEST_ID, check_optional_id

log = logging.getLogger(__name__)

Created = TypeVar("Created")


def delivery_id(event_id: str, aggregate_id: str, topic: str) -> str:
    """The id an event is deduplicated under: its own, else (a producer's bug) one of its aggregate and topic.

    Refusing an event without an id would hold its partition for good; as a redelivery gets the
    same id, its effect is still applied once.
    """
    if event_id:
        return event_id
    log.warning("event without an event id: deduplicated by aggregate and topic",
                extra={"aggregate_id": aggregate_id, "topic": topic})
    return f"{aggregate_id}/{topic}/no-event-id"


async def first_delivery(connection: Connection, consumer: str, event_id: str) -> bool:
    """Record `event_id` for `consumer`; False when it was processed before (skip the effect).

    Call inside the transaction that applies the effect, so the record and the effect
    commit or roll back together.
    """
    if not event_id:
        raise ValueError(f"{consumer}: event without an event id cannot be deduplicated")
    inserted = await connection.fetchval(
        "INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2)"
        " ON CONFLICT DO NOTHING RETURNING 1",
        consumer, event_id,
    )
    return inserted is not None


async def first_deliveries(connection: Connection, consumer: str, event_ids: list[str]) -> set[str]:
    """Record a batch of event ids; return those seen for the first time."""
    if any(not event_id for event_id in event_ids):
        raise ValueError(f"{consumer}: event without an event id cannot be deduplicated")
    rows = await connection.fetch(
        "INSERT INTO processed_events (consumer, event_id)"
        " SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING event_id",
        consumer, list(dict.fromkeys(event_ids)),
    )
    return {row["event_id"] for row in rows}


async def create_once(request_id: str, find: Callable[[], Awaitable[Created | None]],
                      create: Callable[[], Awaitable[Created]]) -> Created:
    """Run `create` once per caller's `request_id`: a retry gets what the first attempt made, even one racing it.

    `find` looks up what the creator made under `request_id` (a UNIQUE (creator, request_id)
    row); `create` checks the request and makes it in one transaction. Without a request id
    every call creates. A retry racing its own first attempt fails on the unique key (or on
    A-2's one-live-competition slot, FailedPrecondition) and then finds the first attempt's.
    """
    check_optional_id(request_id, REQUEST_ID, "request_id")
    if request_id:
        existing = await find()
        if existing is not None:
            return existing
    try:
        return await create()
    except (FailedPrecondition, asyncpg.UniqueViolationError):
        if request_id:
            existing = await find()
            if existing is not None:
                return existing
        raise
