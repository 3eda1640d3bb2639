"""The kit's pool plans each statement for its own parameters (plan_cache_mode), however often it ran before."""

from __future__ import annotations


async def test_a_statement_run_often_on_a_grown_table_is_still_planned_for_its_batch(kit_pool) -> None:
    async with kit_pool.acquire() as connection:
        assert await connection.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
        lookup = ("EXPLAIN SELECT event_id FROM processed_events"
                  " WHERE consumer = $1 AND event_id = ANY($2::text[])")
        # More runs than PostgreSQL needs (5) to settle on a generic plan, while the table is empty.
        for _ in range(8):
            await connection.fetch(lookup, "c", ["e0"])
        await connection.execute("INSERT INTO processed_events (consumer, event_id)"
                                 " SELECT 'c', 'e' || i FROM generate_series(1, 50000) i")
        plan = "\n".join(row[0] for row in await connection.fetch(lookup, "c", ["e1", "e2"]))
    # The plan follows the table as it is now: probes of the key, no scan of 50,000 rows. (This simple
    # lookup keeps its index under PostgreSQL's default too; the batch statements of pairing did not.)
    assert "Index" in plan and "Seq Scan" not in plan, plan
