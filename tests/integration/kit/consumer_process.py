"""A minimal consumer built on the kit, run as a child process by test_outbox_idempotency.py.

It consumes game.finished in group $GROUP_ID and handles only game $GAME_ID (the topic is
shared with every other test of the session; some publish bare events): in one transaction it
records the event id and inserts an effect row. Every delivery is also logged outside that
transaction, so the test can see a redelivery. When $CRASH_MARKER names a file that does not
exist yet, the process creates it and SIGKILLs itself right after the
effect committed and before the offset commit: the window the outbox/idempotency design
must survive.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from arbiter.kit import events
from arbiter.kit.db import create_pool, migrate
from arbiter.kit.idempotency import first_delivery
from arbiter.kit.kafka import make_broker, subscribe
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import StoredSetAside
from arbiter.kit.settings import KitSettings, load_settings

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS deliveries (game_id text NOT NULL, at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS effects (game_id text NOT NULL, at timestamptz NOT NULL DEFAULT now());
"""


async def main() -> None:
    settings = load_settings(KitSettings, grpc_port=0, metrics_port=0)
    schema = os.environ["SCHEMA"]
    game_id = os.environ["GAME_ID"]
    crash_marker = Path(os.environ["CRASH_MARKER"]) if os.environ.get("CRASH_MARKER") else None
    metrics = Metrics("kit_consumer")
    pool = await create_pool(settings.database_url, schema)
    await migrate(pool, schema, [])
    await pool.execute(SCHEMA_SQL)
    broker = make_broker(settings, "kit_consumer")

    async def on_finished(event: events.ev.GameFinished) -> str:
        if event.game_id != game_id:
            return "ignored"
        await pool.execute("INSERT INTO deliveries (game_id) VALUES ($1)", event.game_id)
        async with pool.acquire() as connection, connection.transaction():
            if not await first_delivery(connection, "kit_consumer", event.meta.event_id):
                return "duplicate"
            await connection.execute("INSERT INTO effects (game_id) VALUES ($1)", event.game_id)
        if crash_marker is not None and not crash_marker.exists():
            crash_marker.write_text("crashed after the effect, before the offset commit")
            os.kill(os.getpid(), signal.SIGKILL)
        return "handled"

    subscribe(broker, settings, metrics, events.GAME_FINISHED, os.environ["GROUP_ID"], on_finished,
              set_aside=StoredSetAside(pool, metrics))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    await broker.start()
    print("consumer ready", flush=True)
    await stop.wait()
    await broker.stop()
    await pool.close()


if __name__ == "__main__":
    asyncio.run(main())
