"""PostgreSQL: Triple Block games (their system of record, mirrored in Redis), verdicts, and the copy of live games.

A Triple Block game lives for months, so every change to it is a row-locked transaction here
(with its events in the outbox), then copied to Redis for reads and the deadline set. A crash
between the commit and the copy leaves Redis one version behind; `reconcile` (periodically, and
in the rebuild after a Redis loss, `rebuild.HotRebuild`) copies every live row again.

Live (Fischer) games live in Redis; `LiveCopies` keeps a copy of each here, written once per
handled batch (one statement), so that a Redis lost at any moment is rebuilt from it.
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
from arbiter.kit.convert import TERMINATION_TO_PROTO
from arbiter.kit.db import Connection, fetch_one
from arbiter.kit.outbox import Outbox
from arbiter.kit.pause import pause
from services.clock.clocked_game import ClockedGame, Status, StoredCopy, decode_body, encode_body, game_deadline_ms
from services.clock.convert import verdict_event
from services.clock.hot import HotStateLost, LiveRow, LiveStore

log = logging.getLogger(__name__)
T = TypeVar("T")
RowMutation = Callable[[Connection, ClockedGame], Awaitable[T]]


class StaleSeedError(RuntimeError):
    """The Redis record a new row was made from changed meanwhile; the caller retries."""


class CorrespondenceStore:
    """Triple Block clocked games: locked, changed and saved in PostgreSQL, then mirrored to Redis."""

    def __init__(self, pool: asyncpg.Pool, live: LiveStore) -> None:
        self.pool = pool
        self.live = live

    async def load(self, game_id: str) -> ClockedGame | None:
        """The record as PostgreSQL has it, or None."""
        raw = await self.pool.fetchval("SELECT record FROM tb_games WHERE game_id = $1", game_id)
        return None if raw is None else decode_body(game_id, "", raw, self.live.metas)

    async def known(self, game_ids: Sequence[str]) -> set[str]:
        """Which of `game_ids` are Triple Block games stored here."""
        rows = await self.pool.fetch("SELECT game_id FROM tb_games WHERE game_id = ANY($1::text[])", list(game_ids))
        return {row["game_id"] for row in rows}

    async def change(
        self, game_id: str, mutate: RowMutation[T], create: ClockedGame | None = None
    ) -> tuple[T, ClockedGame] | None:
        """Lock the game's row, let `mutate` change the record (and add events), save, then mirror.

        Without a row: inserts `create` first, or returns None when `create` is None.
        `mutate` raising rolls everything back.
        """
        async with self.pool.acquire() as connection, connection.transaction():
            row = await connection.fetchrow(
                "SELECT version, record FROM tb_games WHERE game_id = $1 FOR UPDATE", game_id
            )
            created = row is None
            if row is None:
                if create is None:
                    return None
                await connection.execute(
                    "INSERT INTO tb_games (game_id, version, status, record) VALUES ($1, 0, $2, $3)"
                    " ON CONFLICT (game_id) DO NOTHING",
                    game_id, create.status.value, encode_body(create),
                )
                # What the live copy held of it (events before its time control) is this row's now.
                await connection.execute("DELETE FROM live_games WHERE game_id = $1", game_id)
                row = await fetch_one(
                    connection, "SELECT version, record FROM tb_games WHERE game_id = $1 FOR UPDATE", game_id
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
                game_id, version, record.status.value, encode_body(record), game_deadline_ms(record),
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


# One statement per batch: the batch's records replace older copies (a copy never goes back to an
# older version, nor out of `over`), under the epoch their Redis writes were made in. The epoch row is
# locked in share mode: a rebuild moves the epoch on under its update lock before reading the copies,
# so a batch either lands before that read (and is rebuilt) or finds the epoch changed (and is handled
# again, its Redis writes being lost).
_SAVE_COPIES = """
WITH fence AS (SELECT epoch FROM hot_epoch WHERE prefix = $8 AND epoch = $1 FOR SHARE),
written AS (
    INSERT INTO live_games AS l (game_id, version, status, record, early, expires_at)
    SELECT g, v, s, r, e, now() + t * interval '1 millisecond'
    FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[]) AS u(g, v, s, r, e, t)
    WHERE EXISTS (SELECT 1 FROM fence)
    ON CONFLICT (game_id) DO UPDATE SET version = excluded.version, status = excluded.status,
        record = excluded.record, early = excluded.early, expires_at = excluded.expires_at
    WHERE l.version < excluded.version AND l.status <> 'over'
)
SELECT EXISTS (SELECT 1 FROM fence)
"""
_COPY_FIELDS = "version, record, early, (extract(epoch FROM expires_at - now()) * 1000)::bigint AS left_ms"


class LiveCopies:
    """PostgreSQL's copy of every live (Fischer) clocked game: what Redis is rebuilt from after a loss.

    `prefix` names the Redis keys whose epoch fences the copies (one service's, CLOCK_REDIS_PREFIX).
    """

    def __init__(self, pool: asyncpg.Pool, prefix: str) -> None:
        self.pool = pool
        self.prefix = prefix

    async def save(self, rows: Sequence[LiveRow], connection: Connection | None = None) -> None:
        """Copy the records a batch saved in Redis; HotStateLost when that Redis has been lost since.

        Rows of one game keep their newest version. Written under the epoch of the Redis writes: a
        batch that wrote to a Redis lost or rebuilt meanwhile (another epoch) writes nothing here.
        """
        if not rows:
            return
        newest: dict[str, LiveRow] = {}
        for row in rows:
            kept = newest.get(row.game_id)
            if kept is None or kept.version < row.version:
                newest[row.game_id] = row
        epochs = {row.epoch for row in newest.values()}
        if len(epochs) > 1:
            raise HotStateLost("a batch wrote to Redis under two epochs: what it wrote before the change is lost")
        (epoch,) = epochs
        batch = list(newest.values())
        fenced = await (connection or self.pool).fetchval(
            _SAVE_COPIES, epoch, [r.game_id for r in batch], [r.version for r in batch], [r.status for r in batch],
            [r.body for r in batch], [r.early for r in batch], [r.ttl_ms for r in batch], self.prefix,
        )
        if not fenced:
            raise HotStateLost(f"Redis was rebuilt since epoch {epoch!r}: the batch's writes there are lost")

    async def lookup(self, game_ids: Sequence[str]) -> tuple[set[str], dict[str, StoredCopy]]:
        """Of `game_ids` (games Redis does not hold): the Triple Block ones, and the stored copies of live ones."""
        # One round trip: the Triple Block check was already made here for games Redis lacks.
        rows = await self.pool.fetch(
            "SELECT game_id, true AS triple_block, 0::bigint AS version, '' AS record, '' AS early,"
            " NULL::bigint AS left_ms FROM tb_games WHERE game_id = ANY($1::text[])"
            f" UNION ALL SELECT game_id, false, {_COPY_FIELDS} FROM live_games"
            " WHERE game_id = ANY($1::text[]) AND (expires_at IS NULL OR expires_at > now())",
            list(game_ids),
        )
        triple_block = {row["game_id"] for row in rows if row["triple_block"]}
        copies = {row["game_id"]: _copy(row) for row in rows
                  if not row["triple_block"] and row["game_id"] not in triple_block}
        return triple_block, copies

    async def load(self, game_id: str) -> StoredCopy | None:
        """One game's stored copy, unless it has expired."""
        row = await self.pool.fetchrow(
            f"SELECT game_id, {_COPY_FIELDS} FROM live_games"
            " WHERE game_id = $1 AND (expires_at IS NULL OR expires_at > now())",
            game_id,
        )
        return None if row is None else _copy(row)

    @staticmethod
    async def restorable(connection: Connection, over_ttl_ms: int, over_for_ms: int) -> list[StoredCopy]:
        """What a rebuild writes back: every game not over, and those over for at most `over_for_ms`.

        A finished game's copy expires `over_ttl_ms` after its end: one over for at most X expires
        after now + over_ttl_ms - X. Triple Block games are not here (their own rows are copied).
        """
        rows = await connection.fetch(
            f"SELECT game_id, {_COPY_FIELDS} FROM live_games l"
            " WHERE (l.status <> 'over' OR l.expires_at > now() + $1::bigint * interval '1 millisecond')"
            " AND (l.expires_at IS NULL OR l.expires_at > now())"
            " AND NOT EXISTS (SELECT 1 FROM tb_games t WHERE t.game_id = l.game_id)",
            over_ttl_ms - over_for_ms,
        )
        return [_copy(row) for row in rows]

    async def sweep(self, limit: int = 5_000) -> int:
        """Delete copies Redis would have let expire (finished games, games never started); return how many."""
        deleted = 0
        while True:
            status = await self.pool.execute(
                "DELETE FROM live_games WHERE game_id IN (SELECT game_id FROM live_games"
                " WHERE expires_at IS NOT NULL AND expires_at <= now() LIMIT $1)",
                limit,
            )
            count = int(status.split()[-1])
            deleted += count
            if count < limit:
                return deleted


def _copy(row: asyncpg.Record) -> StoredCopy:
    return StoredCopy(row["game_id"], row["version"], row["record"], row["early"], row["left_ms"])


async def save_verdicts(
    connection: Connection, outbox: Outbox, decided: Sequence[tuple[ClockedGame, Verdict]], now: datetime
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
        [v.kind.value for _, v in decided],
        [r.meta.player(v.loser) if v.loser else "" for r, v in decided],
        [TERMINATION_TO_PROTO[v.reason] for _, v in decided],
        [v.loser_never_sat for _, v in decided],
        [datetime.fromtimestamp(v.at_ms / 1000, UTC) for _, v in decided],
        [now] * len(decided),
    )
    inserted = {row["game_id"] for row in rows}
    events = [verdict_event(record, verdict) for record, verdict in decided if record.game_id in inserted]
    await outbox.add(connection, *events)
    return inserted


class Reconciler:
    """Copies live Triple Block rows to Redis now and then, and deletes expired copies of live games."""

    def __init__(self, correspondence: CorrespondenceStore, copies: LiveCopies, every_seconds: float) -> None:
        self.correspondence = correspondence
        self.copies = copies
        self.every_seconds = every_seconds

    async def run(self, stop: asyncio.Event) -> None:
        """Reconcile until `stop` is set; a failed round is retried at the next one."""
        while not stop.is_set():
            try:
                copied = await self.correspondence.reconcile()
                if copied:
                    log.debug("triple block rows copied to redis", extra={"rows": copied})
                swept = await self.copies.sweep()
                if swept:
                    log.debug("expired live game copies deleted", extra={"rows": swept})
            except (RedisError, OSError, asyncpg.PostgresError) as error:
                log.warning("reconcile failed, retrying later", extra={"error": repr(error)})
            await pause(stop, self.every_seconds)
