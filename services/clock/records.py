"""PostgreSQL: Triple Block games (their system of record, mirrored in Redis) and verdicts.

A Triple Block game lives for months, so every change to it is a row-locked transaction here
(with its events in the outbox), then copied to Redis for reads and the deadline set. A crash
between the commit and the copy leaves Redis one version behind; `reconcile` (at start and
periodically) copies every live row again, and rebuilds Redis entirely after a Redis loss.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

import asyncpg
from redis.exceptions import RedisError

from arbiter.clocks import Verdict
from arbiter.kit.outbox import Outbox
from arbiter.kit.pause import pause
from services.clock.messages import verdict_event
from services.clock.model import GameRecord, Status, decode_body, encode_body, record_deadline_ms
from services.clock.store import LiveStore

log = logging.getLogger(__name__)
T = TypeVar("T")
RowMutation = Callable[[asyncpg.Connection, GameRecord], Awaitable[T]]


class StaleSeedError(RuntimeError):
    """The Redis record a new row was made from changed meanwhile; the caller retries."""


class CorrespondenceStore:
    """Triple Block game records: locked, changed and saved in PostgreSQL, then mirrored to Redis."""

    def __init__(self, pool: asyncpg.Pool, live: LiveStore) -> None:
        self.pool = pool
        self.live = live

    async def load(self, game_id: str) -> GameRecord | None:
        """The record as PostgreSQL has it, or None."""
        raw = await self.pool.fetchval("SELECT record FROM tb_games WHERE game_id = $1", game_id)
        return None if raw is None else decode_body(game_id, "", raw, self.live.metas)

    async def known(self, game_ids: Sequence[str]) -> set[str]:
        """Which of `game_ids` are Triple Block games stored here."""
        rows = await self.pool.fetch("SELECT game_id FROM tb_games WHERE game_id = ANY($1::text[])", list(game_ids))
        return {row["game_id"] for row in rows}

    async def change(
        self, game_id: str, mutate: RowMutation[T], create: GameRecord | None = None
    ) -> tuple[T, GameRecord] | None:
        """Lock the game's row, let `mutate` change the record (and add events), save, then mirror.

        Without a row: inserts `create` first, or returns None when `create` is None.
        `mutate` raising rolls everything back.
        """
        async with self.pool.acquire() as connection:
            async with connection.transaction():
                row = await connection.fetchrow(
                    "SELECT version, record FROM tb_games WHERE game_id = $1 FOR UPDATE", game_id
                )
                created = row is None
                if created:
                    if create is None:
                        return None
                    await connection.execute(
                        "INSERT INTO tb_games (game_id, version, status, record) VALUES ($1, 0, $2, $3)"
                        " ON CONFLICT (game_id) DO NOTHING",
                        game_id, create.status.value, encode_body(create),
                    )
                    row = await connection.fetchrow(
                        "SELECT version, record FROM tb_games WHERE game_id = $1 FOR UPDATE", game_id
                    )
                record = decode_body(game_id, "", row["record"], self.live.metas)
                if create is not None:
                    # Early moves only ever live in Redis: carry them over to be applied at the start.
                    record.early_moves.update(create.early_moves)
                result = await mutate(connection, record)
                version = row["version"] + 1
                await connection.execute(
                    "UPDATE tb_games SET version = $2, status = $3, record = $4, deadline_ms = $5, updated_at = now()"
                    " WHERE game_id = $1",
                    game_id, version, record.status.value, encode_body(record), record_deadline_ms(record),
                )
                if created and create is not None and not await self.live.mirror(record, version, create.version):
                    # Redis changed since `create` was read from it: start again from what it holds now.
                    raise StaleSeedError(f"game {game_id} changed in Redis while its row was created")
        if not created:
            await self.live.mirror(record, version)
        return result, record

    async def reconcile(self) -> int:
        """Copy every game not over to Redis (a no-op for copies already current); return how many rows."""
        rows = await self.pool.fetch(
            "SELECT game_id, version, record FROM tb_games WHERE status <> $1", Status.OVER.value
        )
        for row in rows:
            await self.live.mirror(decode_body(row["game_id"], "", row["record"], self.live.metas), row["version"])
        return len(rows)


async def save_verdicts(
    connection: asyncpg.Connection, outbox: Outbox, decided: Sequence[tuple[GameRecord, Verdict]], now: datetime
) -> set[str]:
    """Record each game's verdict once and its event in the outbox; return the games recorded now.

    A game already in `verdicts` (a re-fire after a crash, or another replica) gets nothing.
    """
    if not decided:
        return set()
    rows = await connection.fetch(
        "INSERT INTO verdicts (game_id, outcome, loser_id, reason, never_sat, flagged_at, decided_at)"
        " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bool[],"
        " $6::timestamptz[], $7::timestamptz[])"
        " ON CONFLICT (game_id) DO NOTHING RETURNING game_id",
        [r.game_id for r, _ in decided],
        [v.outcome.value for _, v in decided],
        [r.meta.player(v.loser) if v.loser else "" for r, v in decided],
        [v.reason for _, v in decided],
        [v.loser_never_sat for _, v in decided],
        [datetime.fromtimestamp(v.at_ms / 1000, UTC) for _, v in decided],
        [now] * len(decided),
    )
    inserted = {row["game_id"] for row in rows}
    events = [verdict_event(record, verdict) for record, verdict in decided if record.game_id in inserted]
    await outbox.add(connection, *events)
    return inserted


class Reconciler:
    """Copies live Triple Block rows to Redis at start and then periodically (Redis loss, crashes)."""

    def __init__(self, correspondence: CorrespondenceStore, every_seconds: float) -> None:
        self.correspondence = correspondence
        self.every_seconds = every_seconds

    async def run(self, stop: asyncio.Event) -> None:
        """Reconcile until `stop` is set; a failed round is retried at the next one."""
        while not stop.is_set():
            try:
                copied = await self.correspondence.reconcile()
                if copied:
                    log.debug("triple block rows copied to redis", extra={"rows": copied})
            except (RedisError, OSError, asyncpg.PostgresError) as error:
                log.warning("reconcile failed, retrying later", extra={"error": repr(error)})
            await pause(stop, self.every_seconds)
