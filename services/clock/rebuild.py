"""Making Redis whole again after it lost the clock's keys: live games, parked moves, deadlines, Triple Block.

Redis holds an epoch (`LiveStore.epoch_key`) naming the state it holds; PostgreSQL holds the same
epoch (`hot_epoch`, a row per key prefix). Every write script checks that Redis's epoch is the one its writer knows,
so a Redis that came back empty (killed, flushed, a failover) takes no write until it is rebuilt,
and a write that was made before the loss is known to be lost (its batch is handled again).

`HotRebuild.recover`, called at start and whenever a write or a claim finds the epoch changed:
1. locks the epoch row (one rebuild at a time across replicas; copies of batches wait for it);
2. if Redis holds the epoch PostgreSQL names, another replica has rebuilt it: adopt that epoch;
3. otherwise drop Redis's epoch (writers stop), name this rebuild in Redis (a token), move the
   epoch on in PostgreSQL, read every live copy not over (and those over for a short while),
   make Redis hold exactly those (any other game string goes, and what Redis held beyond a copy
   is replaced by it), copy every live Triple Block row again, set the new epoch in Redis if the
   token still stands, and commit.
A batch whose copy lands before step 3's read is in it; one that comes after finds the epoch
changed and is handled again from Kafka, on the records as PostgreSQL had them. A replica that
dies mid-rebuild leaves no epoch in Redis and its transaction rolls back: the next writer
rebuilds, without waiting for anything.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
import uuid
from collections.abc import Iterable

import asyncpg

from arbiter.kit.db import Connection
from services.clock.clocked_game import GameMeta, Restore, StoredCopy, restore_of
from services.clock.hot import HotStateLost, LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.store import CorrespondenceStore, LiveCopies

log = logging.getLogger(__name__)


class Recovery(enum.Enum):
    """What a process does when a write finds Redis's epoch is not the one it knows."""

    # Redis holds the epoch PostgreSQL names: nothing is lost (another replica rebuilt it, or this
    # process starts): write under it from now on.
    ADOPT = "adopt"
    # Redis holds no epoch, or another one (a rebuild that never committed): rebuild from PostgreSQL.
    REBUILD = "rebuild"


def recovery_action(redis_epoch: str | None, stored_epoch: str) -> Recovery:
    """ADOPT when Redis holds the (non-empty) epoch PostgreSQL names, else REBUILD."""
    if stored_epoch and redis_epoch == stored_epoch:
        return Recovery.ADOPT
    return Recovery.REBUILD


def rebuild_plan(copies: Iterable[StoredCopy], metas: dict[str, GameMeta] | None = None) -> list[Restore]:
    """What a rebuild writes back to Redis: each copy that has not expired, with its deadline and expiry."""
    return [entry for copy in copies if (entry := restore_of(copy, metas)) is not None]


class HotRebuild:
    """Detects that Redis lost the clock's keys and rebuilds them from PostgreSQL, once across replicas."""

    def __init__(
        self, live: LiveStore, correspondence: CorrespondenceStore, pool: asyncpg.Pool, metrics: ClockMetrics,
        *, over_ttl_ms: int, rebuild_over_ms: int, lease_ms: int,
    ) -> None:
        self.live = live
        self.correspondence = correspondence
        self.pool = pool
        self.metrics = metrics
        self.over_ttl_ms = over_ttl_ms
        # Finished games written back by a rebuild: those over for at most this long (a late or
        # repeated event for them is likely); older ones come back when something asks for them.
        self.rebuild_over_ms = rebuild_over_ms
        self.lease_ms = lease_ms
        # One recovery at a time in this process: writers that find the epoch changed together wait
        # for the first one, then find the new epoch adopted.
        self._lock = asyncio.Lock()
        live.on_lost(self.recover)

    async def recover(self) -> None:
        """Adopt the epoch another replica rebuilt, or rebuild Redis from PostgreSQL (see the module)."""
        async with self._lock:
            async with self.pool.acquire() as connection, connection.transaction():
                await connection.execute("INSERT INTO hot_epoch (prefix, epoch) VALUES ($1, '')"
                                         " ON CONFLICT (prefix) DO NOTHING", self.live.prefix)
                stored = await connection.fetchval("SELECT epoch FROM hot_epoch WHERE prefix = $1 FOR UPDATE",
                                                   self.live.prefix)
                current = await self.live.current_epoch()
                if recovery_action(current, stored) is Recovery.ADOPT:
                    if self.live.epoch != stored:
                        self.live.adopt(stored)
                    return
                epoch = await self._rebuild(connection, stored, current)
            self.live.adopt(epoch)

    async def _rebuild(self, connection: Connection, stored: str, current: str | None) -> str:
        started = time.monotonic()
        token = uuid.uuid4().hex
        await self.live.begin_rebuild(token, self.lease_ms)
        epoch = uuid.uuid4().hex
        await connection.execute("UPDATE hot_epoch SET epoch = $1 WHERE prefix = $2", epoch, self.live.prefix)
        copies = await LiveCopies.restorable(connection, self.over_ttl_ms, self.rebuild_over_ms)
        plan = rebuild_plan(copies, self.live.metas)
        written = await self.live.rebuild_copies(token, plan)
        mirrored = await self.correspondence.reconcile()
        if not await self.live.end_rebuild(token, epoch):
            raise HotStateLost("another process took the Redis rebuild over; its own rebuild stands")
        facts = {"live_games": written, "triple_block_games": mirrored, "previous_epoch": stored,
                 "epoch_found": current, "seconds": round(time.monotonic() - started, 3)}
        if not stored:
            # The first start on this database: there was nothing to lose.
            log.info("clock's redis epoch set", extra=facts)
            return epoch
        self.metrics.hot_rebuilds.labels(self.metrics.service, "clocks").inc()
        self.metrics.restored("live_games", written)
        self.metrics.restored("triple_block", mirrored)
        log.warning("redis lost the clock's keys: rebuilt from PostgreSQL", extra=facts)
        return epoch
