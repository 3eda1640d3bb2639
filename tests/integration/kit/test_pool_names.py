"""Each replica's PostgreSQL connections carry its name, so pg_stat_activity counts them per replica."""

from __future__ import annotations

from arbiter.kit.db import create_pool


async def test_a_replicas_connections_are_named_after_its_service_and_itself(database_url: str) -> None:
    named, plain = await create_pool(database_url, "kit", replica="clock-2"), await create_pool(database_url, "kit")
    try:
        assert await named.fetchval("SELECT current_setting('application_name')") == "arbiter-kit/clock-2"
        assert await plain.fetchval("SELECT current_setting('application_name')") == "arbiter-kit"
        held = await plain.fetchval("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                                    "arbiter-kit/clock-2")
        assert held == named.get_size()
    finally:
        await named.close()
        await plain.close()
