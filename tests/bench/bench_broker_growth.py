"""Embedded broker: how tansu's cost per record grows with the record batches a partition holds.

Run: .venv/bin/python tests/bench/bench_broker_growth.py [--consumers 4] [--rounds 3] [--records 2000]
     [--records-per-request 1 10]

tansu's memory storage keeps every produced record batch as one object and never drops any
(no retention; DeleteRecords closes the connection). A fetch at an offset below the high
watermark lists every object of the partition to find where to read, so each fetch that
returns records costs more the longer the broker has run. An idle fetch (nothing new) does
not list and costs the same whatever the partition holds.

This starts its own tansu (memory storage) on a free port, makes a topic of one partition
(as the embedded stack's), and `--consumers` consumer groups that poll it with a 20 ms fetch
wait (the system benchmark's). Then, for each `--records-per-request`, on a fresh topic, it
publishes `--rounds` rounds of `--records` records in produce requests of that many records
(each awaited, as a play site publishes a game's result), and prints per round: the batches
stored at the end, the broker's CPU per record (the fetches it caused included), and the
polls that returned records. The same records in fewer, larger batches show that the cost
follows the batches, not the records. Last, the consumers sit idle on the full partition and
the broker's CPU is printed.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import psutil
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from arbiter_tools.devstack.infra import create_topic, start_tansu
from arbiter_tools.devstack.processes import free_port

FETCH_WAIT_MS = 20
RECORD = b"r" * 300


class Readers:
    """Consumer groups polling one topic, counting the polls that returned records."""

    def __init__(self, bootstrap: str, topic: str, groups: int) -> None:
        self.consumers = [
            AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"bench-{uuid.uuid4().hex[:8]}",
                             fetch_max_wait_ms=FETCH_WAIT_MS, auto_offset_reset="latest")
            for _ in range(groups)
        ]
        self.polls_with_records = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Join every group and start polling."""
        for consumer in self.consumers:
            await consumer.start()
        self._tasks = [asyncio.create_task(self._poll(consumer)) for consumer in self.consumers]

    async def _poll(self, consumer: AIOKafkaConsumer) -> None:
        while True:
            if await consumer.getmany(timeout_ms=1000):
                self.polls_with_records += 1

    async def stop(self) -> None:
        """Stop polling and leave every group."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for consumer in self.consumers:
            await consumer.stop()


async def measure(bootstrap: str, broker: psutil.Process, args: argparse.Namespace, per_request: int) -> None:
    """Rounds of produce requests of `per_request` records onto a fresh topic read by the consumer groups."""
    topic = await create_topic(bootstrap, f"bench.growth.{uuid.uuid4().hex[:8]}", 1)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    readers = Readers(bootstrap, topic, args.consumers)
    await producer.start()
    await readers.start()
    try:
        await asyncio.sleep(2)
        print(f"{per_request} record(s) per produce request, {args.consumers} consumer groups:")
        requests = args.records // per_request
        stored = 0
        for number in range(1, args.rounds + 1):
            cpu_before = sum(broker.cpu_times()[:2])
            polls_before = readers.polls_with_records
            started = time.perf_counter()
            for _ in range(requests):
                sends = [await producer.send(topic, RECORD) for _ in range(per_request)]
                await asyncio.gather(*sends)
            elapsed = time.perf_counter() - started
            stored += requests
            cpu = sum(broker.cpu_times()[:2]) - cpu_before
            records = requests * per_request
            print(f"  round {number}: {stored:>6} batches stored, {records / elapsed:7.0f} records/s, "
                  f"broker CPU {cpu / records * 1e6:7.0f} us per record, "
                  f"{readers.polls_with_records - polls_before} polls returned records")
        cpu_before = sum(broker.cpu_times()[:2])
        await asyncio.sleep(5)
        idle = (sum(broker.cpu_times()[:2]) - cpu_before) / 5 * 100
        print(f"  idle on the full partition: broker CPU {idle:.1f}% of a core")
    finally:
        await readers.stop()
        await producer.stop()


async def main(args: argparse.Namespace) -> None:
    """Start tansu, measure each records-per-request setting, stop tansu."""
    port = free_port()
    with tempfile.TemporaryDirectory() as state:
        process = start_tansu(port, Path(state) / "tansu.log")
        try:
            broker = psutil.Process(process.pid)
            for per_request in args.records_per_request:
                await measure(f"127.0.0.1:{port}", broker, args, per_request)
        finally:
            process.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--consumers", type=int, default=4, help="consumer groups reading the topic")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of produce requests")
    parser.add_argument("--records", type=int, default=2000, help="records per round")
    parser.add_argument("--records-per-request", type=int, nargs="+", default=[1, 10],
                        help="records in each produce request (one run per value, each on a fresh topic)")
    asyncio.run(main(parser.parse_args()))
