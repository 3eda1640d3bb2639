"""The reconciler gives a Triple Block game back a deadline lost on its own (real Redis and PostgreSQL).

A Redis copy can come back before its deadline entry goes: a loss of the copy and of the entry
that are not one step (the string deleted, the reconciler copying the row again, then the entry
removed). The copy is current then, so copying it again wrote nothing and the game, which lives
for months, never flagged (TB-4). A game in flight keeps its claim: the replica deciding it
puts its deadline back itself.
"""

from __future__ import annotations

from arbiter.kit.timesource import TimeSource
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind, game_deadline_ms
from services.clock.store import CorrespondenceStore
from tests.integration.clock.conftest import clock_backend, live_store

DAY_MS = 86_400_000
TRIPLE_BLOCK = GameMeta(white_id="w", black_id="b", kind=Kind.TRIPLE_BLOCK, tb_increment_days=1, tb_bank_days=50,
                        guaranteed_time=True)


async def running_triple_block(correspondence: CorrespondenceStore, game_id: str, now_ms: int) -> int:
    """A Triple Block game whose white clock runs, stored in PostgreSQL and mirrored; its deadline (ms)."""
    seed = ClockedGame(game_id)

    async def start(_connection, record: ClockedGame) -> int | None:  # type: ignore[no-untyped-def]
        ops.on_requested(record, TRIPLE_BLOCK, now_ms)
        ops.on_started(record, TRIPLE_BLOCK, now_ms, now_ms)
        return game_deadline_ms(record)

    changed = await correspondence.change(game_id, start, create=seed)
    assert changed is not None and changed[0] is not None
    return changed[0]


async def test_a_current_copy_without_its_deadline_gets_it_back_unless_the_game_is_claimed(infra_env) -> None:
    async with clock_backend(infra_env, "reconcile") as backend:
        redis, prefix = backend.redis, backend.prefix
        live = await live_store(backend.pool, redis, prefix)
        correspondence = CorrespondenceStore(backend.pool, live)
        now_ms = TimeSource().now_ms()
        deadline = await running_triple_block(correspondence, "tb-lost", now_ms)
        assert deadline > now_ms + DAY_MS  # one day to move, plus the bank's share (TB-1)
        assert await redis.zscore(f"{prefix}:deadlines", "tb-lost") == deadline
        copy = await redis.get(f"{prefix}:g:tb-lost")

        # Copying a current row again changes nothing.
        assert await correspondence.reconcile() == 1
        assert await redis.get(f"{prefix}:g:tb-lost") == copy
        assert await redis.zscore(f"{prefix}:deadlines", "tb-lost") == deadline

        # The entry alone is lost: the next reconcile puts it back, the copy untouched.
        await redis.zrem(f"{prefix}:deadlines", "tb-lost")
        await correspondence.reconcile()
        assert await redis.zscore(f"{prefix}:deadlines", "tb-lost") == deadline
        assert await redis.get(f"{prefix}:g:tb-lost") == copy

        # A replica has claimed it (deadlines -> inflight): the claim stands, no second entry.
        claimed, _nearest = await live.claim(deadline, deadline + 60_000, 10)
        assert claimed == ["tb-lost"]
        await correspondence.reconcile()
        assert await redis.zscore(f"{prefix}:deadlines", "tb-lost") is None
        assert await redis.zscore(f"{prefix}:inflight", "tb-lost") == deadline + 60_000

        # An older row never writes over the copy nor adds an entry.
        await live.release(["tb-lost"])
        stale = await correspondence.load("tb-lost")
        assert stale is not None
        row_version = await backend.pool.fetchval("SELECT version FROM tb_games WHERE game_id = 'tb-lost'")
        assert await live.mirror(stale, row_version - 1)
        assert await redis.zscore(f"{prefix}:deadlines", "tb-lost") is None
        assert await redis.get(f"{prefix}:g:tb-lost") == copy
