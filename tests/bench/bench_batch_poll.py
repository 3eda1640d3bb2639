"""A batch consumer's poll on tansu: how soon a record after a quiet spell is handled, how often an idle consumer polls.

Prints figures, asserts nothing (bench scripts never assert timings; tests/integration/kit/test_batch_poll.py
checks the loop's shape). Quiet spells of different lengths land each record at another point of the poll
cycle: with a sleep of a whole poll after each empty one (FastStream's own loop), about half would wait in it,
up to a poll each. With the kit's loop a record waits about the broker's fetch wait.

    .venv/bin/python tests/bench/bench_batch_poll.py [--poll-ms 1000] [--idle-poll-ms 200] [--idle-seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from arbiter.contracts import events_pb2 as ev
from arbiter.kit import events
from arbiter.kit.kafka import ensure_topics, make_broker, subscribe_many
from arbiter.kit.metrics import Metrics
from arbiter.kit.poison import LoggedSetAside
from arbiter.kit.settings import KitSettings
from arbiter_tools.devstack.infra import start_tansu
from arbiter_tools.devstack.processes import free_port
from arbiter_tools.simulator.bench.readings import wait_until

QUIET_SPELLS = (1.3, 1.7, 1.45, 1.9, 1.15, 1.6)


def settings_for(bootstrap: str, poll_ms: int) -> KitSettings:
    """Kit settings on `bootstrap` with a batch poll of `poll_ms` and a 20 ms fetch wait."""
    return KitSettings(kafka_bootstrap_servers=bootstrap, redis_url="redis://127.0.0.1:1/0",
                       database_url="postgresql://unused", grpc_port=0, metrics_port=0,
                       kafka_heartbeat_interval_ms=500, kafka_fetch_max_wait_ms=20, kafka_batch_poll_ms=poll_ms)


async def assigned(subscriber: Any) -> None:
    """Wait until the subscriber's consumer owns a partition."""
    if not await wait_until(lambda: bool(subscriber.consumer.assignment()), 60):
        raise TimeoutError("the subscriber was assigned no partition in 60 s")


async def record_waits(bootstrap: str, poll_ms: int) -> list[float]:
    """Seconds from the producer's acknowledgement to the handler, one per quiet spell."""
    settings = settings_for(bootstrap, poll_ms)
    tag = uuid.uuid4().hex[:8]
    broker = make_broker(settings, "bench_poll")
    arrived: dict[str, float] = {}

    async def on_finished(batch: list[ev.GameFinished]) -> str:
        now = time.monotonic()
        for event in batch:
            arrived.setdefault(event.game_id, now)
        return "handled"

    metrics = Metrics("bench_poll")
    subscriber = subscribe_many(broker, settings, metrics, {events.GAME_FINISHED: on_finished},
                                f"bench-poll-{tag}", set_aside=LoggedSetAside(metrics))
    await broker.start()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await assigned(subscriber)
        waits = []
        for number, quiet in enumerate(QUIET_SPELLS):
            await asyncio.sleep(quiet)
            game_id = f"{tag}-{number}"
            payload = ev.GameFinished(game_id=game_id).SerializeToString()
            await producer.send_and_wait(events.GAME_FINISHED.name, payload, key=game_id.encode())
            sent = time.monotonic()
            # The handler stamps the arrival: how often this looks does not change the figure.
            if not await wait_until(lambda: game_id in arrived, 60):
                raise TimeoutError(f"{game_id} never reached the handler")
            waits.append(arrived[game_id] - sent)
        return waits
    finally:
        await producer.stop()
        await broker.stop()


async def idle_polls(bootstrap: str, poll_ms: int, seconds: float) -> int:
    """How many polls an idle consumer makes in `seconds`."""
    settings = settings_for(bootstrap, poll_ms)
    broker = make_broker(settings, "bench_poll_idle")

    async def on_abandoned(batch: list[ev.GameAbandoned]) -> str:
        return "handled"

    metrics = Metrics("bench_poll_idle")
    subscriber = subscribe_many(broker, settings, metrics, {events.GAME_ABANDONED: on_abandoned},
                                f"bench-poll-idle-{uuid.uuid4().hex[:8]}", set_aside=LoggedSetAside(metrics))
    await broker.start()
    try:
        await assigned(subscriber)
        consumer = subscriber.consumer
        polls = [0]
        getmany = consumer.getmany

        async def counted(*args: Any, **kwargs: Any) -> Any:
            polls[0] += 1
            return await getmany(*args, **kwargs)

        consumer.getmany = counted
        await asyncio.sleep(seconds)
        return polls[0]
    finally:
        await broker.stop()


async def main(args: argparse.Namespace) -> None:
    """Start tansu, measure both figures, stop tansu."""
    port = free_port()
    with tempfile.TemporaryDirectory() as state:
        process = start_tansu(port, Path(state) / "tansu.log")
        try:
            bootstrap = f"127.0.0.1:{port}"
            await ensure_topics(bootstrap, 1)
            waits = await record_waits(bootstrap, args.poll_ms)
            print(f"load average {os.getloadavg()[0]:.2f}")
            print(f"poll {args.poll_ms} ms, fetch wait 20 ms: record after a quiet spell handled after "
                  + ", ".join(f"{wait * 1000:.0f}" for wait in waits) + " ms")
            polls = await idle_polls(bootstrap, args.idle_poll_ms, args.idle_seconds)
            print(f"idle consumer, poll {args.idle_poll_ms} ms: {polls} polls in {args.idle_seconds:g} s "
                  f"({args.idle_seconds * 1000 / args.idle_poll_ms:.0f} would be one per poll time; FastStream's "
                  "poll-then-sleep made about half that)")
            print(f"load average {os.getloadavg()[0]:.2f}")
        finally:
            process.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--poll-ms", type=int, default=1000)
    parser.add_argument("--idle-poll-ms", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=3.0)
    asyncio.run(main(parser.parse_args()))
