"""Flags are verdicts on silence: deadlines that fall due while the broker is out wait for its backlog.

In-process on real Redis and PostgreSQL; the broker's answers are told to the BrokerContact
directly (its pinging is tested against a paused tansu in tests/integration/kit/test_contact.py).
"""

from __future__ import annotations

import asyncio
import time

from arbiter.kit.contact import BrokerContact
from arbiter.kit.metrics import Metrics
from arbiter.kit.outbox import Outbox
from arbiter.kit.timesource import TimeSource
from arbiter.vocabulary import Side
from services.clock import operations as ops
from services.clock.clocked_game import ClockedGame, GameMeta, Kind
from services.clock.flags import FlagPoller
from services.clock.metrics import ClockMetrics
from services.clock.store import CorrespondenceStore
from tests.integration.clock.conftest import clock_backend, live_store


async def never(timeout: float) -> bool:
    return False


async def test_a_deadline_due_during_an_outage_waits_for_the_grace_after_it(infra_env) -> None:
    async with clock_backend(infra_env, "outage") as backend:
        settings, pool, redis, prefix = backend.settings, backend.pool, backend.redis, backend.prefix
        clock = TimeSource()
        live = await live_store(pool, redis, prefix)
        # A long ping interval: this test says when the broker answers.
        contact = BrokerContact(never, interval=60.0, grace=0.6)
        poller = FlagPoller(live, CorrespondenceStore(pool, live), pool, Outbox("clock", clock), clock,
                            ClockMetrics.create(Metrics("clock")), settings, contact)
        now = clock.now_ms()
        meta = GameMeta(white_id="w", black_id="b", kind=Kind.FISCHER, base_s=10)
        before = ClockedGame("outage-before")  # ran out before the broker went away: decided at once
        ops.on_started(before, meta, now - 11_000, now)
        during = ClockedGame("outage-during")  # runs out 300 ms into the outage
        ops.on_started(during, meta, now - 9_700, now)
        for record in (before, during):
            record.presence[Side.WHITE].seen = record.presence[Side.BLACK].seen = True
        assert all(await live.save_many([before, during]))

        contact.heard()
        contact.unanswered()  # the broker stops answering now
        assert await poller.fire_due() == 1
        await asyncio.sleep(0.5)
        assert await poller.fire_due() == 0, "due during the outage: held"
        contact.heard()  # back; its backlog is read during the grace
        released_at = time.monotonic() + contact.grace
        assert await poller.fire_due() == 0, "held during the grace"
        while time.monotonic() < released_at + 0.05:
            await asyncio.sleep(0.05)
        contact.heard()
        assert await poller.fire_due() == 1
        ids = {row["event_id"] for row in await pool.fetch("SELECT event_id FROM outbox")}
        assert ids == {"flag:outage-before", "flag:outage-during"}
