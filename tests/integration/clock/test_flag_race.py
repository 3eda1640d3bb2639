"""Two replicas' flag pollers racing on real Redis and PostgreSQL: each flag is saved exactly once.

In-process (no Kafka needed): both pollers claim from the same deadline set and write to the
same schema. Also the crash window between deciding (Redis) and saving (PostgreSQL): a game a
dead replica left decided and in flight is taken again after its lease, with the same verdict.
"""

from __future__ import annotations

import asyncio

from arbiter.clocks import Verdict, VerdictKind
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side, Termination
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind, Status
from services.clock.flags import FlagPoller
from services.clock.hot import LiveStore
from services.clock.metrics import ClockMetrics
from services.clock.store import CorrespondenceStore
from tests.integration.clock.conftest import clock_backend, live_store

GAMES = 600


async def test_two_pollers_save_each_flag_once(infra_env) -> None:
    async with clock_backend(infra_env, "race", flag_batch_size=50, flag_lease_seconds=0.5) as backend:
        settings, pool, redis, prefix = backend.settings, backend.pool, backend.redis, backend.prefix
        time = TimeSource()
        now = time.now_ms()

        async def replica() -> tuple[LiveStore, FlagPoller, Metrics]:
            registered = Metrics("clock")
            metrics = ClockMetrics.create(registered)
            live = await live_store(pool, redis, prefix, metrics)
            poller = FlagPoller(live, CorrespondenceStore(pool, live), pool, Outbox("clock", time), time, metrics,
                                settings)
            return live, poller, registered

        (live, first, first_metrics), (_, second, second_metrics) = await replica(), await replica()
        meta = GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=10)
        records = []
        for n in range(GAMES):
            record = ClockedGame(f"race-{n}")
            ops.on_started(record, meta, now - 10_000 - n, now)  # every clock ran out 0..GAMES ms ago
            record.presence[Side.BLACK].seen = n % 2 == 0
            records.append(record)
        # A replica died after deciding this game in Redis, before saving it: decided, in flight.
        orphan = ClockedGame("race-orphan")
        ops.on_started(orphan, meta, now - 20_000, now)
        orphan.status = Status.DECIDED
        orphan.verdict = Verdict(VerdictKind.FLAGGED, Side.WHITE, Termination.NEVER_SAT, True, now - 10_000)
        assert all(await live.save_many([*records, orphan]))
        await redis.zadd(f"{prefix}:inflight", {"race-orphan": now - 1})

        async def drain(poller: FlagPoller) -> None:
            while await redis.zcard(f"{prefix}:deadlines") or await redis.zcard(f"{prefix}:inflight"):
                await poller.fire_due()
                await asyncio.sleep(0.001)

        await asyncio.wait_for(asyncio.gather(drain(first), drain(second)), 60)

        rows = await pool.fetch("SELECT event_id, count(*) AS n FROM outbox GROUP BY event_id")
        assert len(rows) == GAMES + 1 and all(row["n"] == 1 for row in rows)
        ids = {row["event_id"] for row in rows}
        assert ids == {f"flag:race-{n}" for n in range(0, GAMES, 2)} | {
            f"abandon:race-{n}" for n in range(1, GAMES, 2)
        } | {"flag:race-orphan"}
        assert await pool.fetchval("SELECT count(*) FROM verdicts") == GAMES + 1
        fired = [
            sum(m.registry.get_sample_value("arbiter_clock_flags_total", {"service": "clock", "reason": r}) or 0
                for r in ("never_sat", "both_absent"))
            for m in (first_metrics, second_metrics)
        ]
        assert sum(fired) == GAMES + 1 and min(fired) > 0, f"both replicas fired some: {fired}"
        states = {(await live.load(r.game_id)).status for r in [*records, orphan]}  # type: ignore[union-attr]
        assert states == {Status.OVER}
