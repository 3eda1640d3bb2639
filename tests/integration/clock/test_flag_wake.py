"""The poller's sleep: this process's own deadlines wake it; other replicas' wait for its blind look.

In-process on real Redis and PostgreSQL. The running poller knows the nearest deadline from each
claim; a deadline this process writes later and earlier than its planned look (a GameStarted,
a move, a drop) wakes it, so the blind look between two claims can be rare. A deadline another
replica writes (a LiveStore the poller does not watch) is found at the next blind look.
"""

from __future__ import annotations

import asyncio

from arbiter.kit.timesource import TimeSource
from tests.integration.clock.conftest import clock_backend, flagged, live_and_poller, live_store, polling, running_out


async def test_a_deadline_written_here_wakes_a_poller_whose_blind_look_is_an_hour_away(infra_env) -> None:
    async with clock_backend(infra_env, "wake", flag_poll_max_seconds=3600.0) as backend:
        pool, clock = backend.pool, TimeSource()
        live, poller = await live_and_poller(backend, clock)
        async with polling(poller):
            await asyncio.sleep(0.2)  # the poller has looked (nothing runs) and sleeps for an hour
            now = clock.now_ms()
            assert all(await live.save_many([running_out("wake-soon", now, 300)]))
            await flagged(pool, "wake-soon")
            # A later deadline, then an earlier one: the poller sleeps until the first and wakes for the second.
            now = clock.now_ms()
            assert all(await live.save_many([running_out("wake-later", now, 1_000)]))
            assert all(await live.save_many([running_out("wake-sooner", now, 200)]))
            await asyncio.gather(flagged(pool, "wake-sooner"), flagged(pool, "wake-later"))


async def test_another_replicas_deadline_is_found_by_the_blind_look(infra_env) -> None:
    async with clock_backend(infra_env, "blind", flag_poll_max_seconds=0.2) as backend:
        pool, clock = backend.pool, TimeSource()
        live, poller = await live_and_poller(backend, clock)
        elsewhere = await live_store(backend.pool, backend.redis, backend.prefix)  # a replica whose poller died
        async with polling(poller):
            await asyncio.sleep(0.3)
            now = clock.now_ms()
            assert all(await elsewhere.save_many([running_out("blind-other", now, 100)]))
            await flagged(pool, "blind-other")
