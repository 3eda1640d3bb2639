"""Pairing's busy registry (T-18): how long rebuilding it from the game topics takes after Redis lost it.

Prints figures, asserts nothing (DESIGN: bench scripts never assert timings). One run:
1. start the infrastructure (KAFKA_BOOTSTRAP_SERVERS / REDIS_URL / DATABASE_URL when given,
   else the embedded tansu, a throwaway redis-server and the machine's or an embedded
   PostgreSQL, on a fresh database) and pairing's schema;
2. publish `--games` casual games of the site onto game.started, and the GameFinished of all but
   `--running-share` of them onto game.finished, as the play site would over a day;
3. rebuild the registry into an empty Redis, as `BusyRebuild` does when its marker is gone,
   `--runs` times (flushing Redis before each), and print events/s, this process's CPU per
   event, and whether exactly the running games' players came out busy.

    .venv/bin/python tests/bench/bench_busy_rebuild.py [--games 100000] [--running-share 0.1] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import asyncpg
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer

from arbiter.contracts import common_pb2 as common
from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.db import create_pool, migrate, migrations_in
from arbiter.kit.kafka import ensure_topics
from arbiter.kit.metrics import Metrics
from arbiter.kit.settings import KitSettings
from arbiter_tools.devstack.stack import SystemStack, scratch_stack
from services.pairing.busy import BusyRebuild, BusyRegistry
from services.pairing.main import MIGRATIONS
from services.pairing.metrics import PairingMetrics


async def publish_history(bootstrap: str, games: int, running_share: float) -> set[str]:
    """Publish the games' starts and most of their ends; return the players of the games still running."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=512 * 1024)
    await producer.start()
    running_every = max(1, round(1 / running_share)) if running_share > 0 else 0
    busy: set[str] = set()
    try:
        pending = []
        for index in range(games):
            game_id, white, black = f"casual-{index}", f"p{2 * index}", f"p{2 * index + 1}"
            started = ev.GameStarted(game_id=game_id, white_id=white, black_id=black)
            pending.append(await producer.send(events.GAME_STARTED.name, started.SerializeToString(),
                                               key=game_id.encode()))
            if running_every and index % running_every == 0:
                busy.update((white, black))
            else:
                finished = ev.GameFinished(game_id=game_id, white_id=white, black_id=black,
                                           result=common.GAME_RESULT_DRAW)
                pending.append(await producer.send(events.GAME_FINISHED.name, finished.SerializeToString(),
                                                   key=game_id.encode()))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return busy


async def run(args: argparse.Namespace, stack: SystemStack) -> None:
    """Publish the history, then time the rebuilds."""
    settings = KitSettings(kafka_bootstrap_servers=stack.kafka_bootstrap, redis_url=stack.redis_url,
                           database_url=stack.database_url, grpc_port=0, metrics_port=0,
                           kafka_fetch_max_wait_ms=100)
    await ensure_topics(stack.kafka_bootstrap, settings.kafka_partitions)
    schema = "pairing"
    pool: asyncpg.Pool = await create_pool(stack.database_url, schema, max_size=2)
    redis = aioredis.from_url(stack.redis_url)
    try:
        await migrate(pool, schema, migrations_in(MIGRATIONS, schema))
        started = time.perf_counter()
        expected = await publish_history(stack.kafka_bootstrap, args.games, args.running_share)
        print(f"published {args.games} games ({len(expected) // 2} still running) "
              f"in {time.perf_counter() - started:.1f} s")
        registry = BusyRegistry(redis, ttl_seconds=86_400)
        rebuild = BusyRebuild(registry, pool, settings, PairingMetrics.create(Metrics("bench")).busy_rebuilds,
                              "bench", check_seconds=5.0, lease_seconds=600)
        players = [f"p{i}" for i in range(2 * args.games)]
        for run_index in range(1, args.runs + 1):
            await redis.flushall()
            wall, cpu = time.perf_counter(), time.process_time()
            done = await rebuild.rebuild()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            replayed = args.games + args.games - len(expected) // 2
            busy = set()
            for start in range(0, len(players), 50_000):
                busy |= await registry.busy(players[start:start + 50_000])
            print(f"run {run_index}: rebuilt={done} {replayed} events in {wall:.2f} s = {replayed / wall:,.0f} "
                  f"events/s; this process {cpu / replayed * 1e6:.1f} us CPU per event; "
                  f"busy players {len(busy)} (expected {len(expected)}, same set: {busy == expected})")
    finally:
        await redis.aclose()
        await pool.close()


def main() -> None:
    """Start the infrastructure, run the benchmark, print the figures, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--running-share", type=float, default=0.1, help="share of the games with no end yet")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with scratch_stack("bench-busy-") as stack:
        asyncio.run(run(args, stack))


if __name__ == "__main__":
    main()
