"""Host probes: the machine's one-core speed, socket round trip, busy and stolen CPU time, raw Kafka and Redis rates.

Also the CPU seconds of single processes and of the infrastructure beside the services (tansu,
PostgreSQL, Redis): what tells whether two runs ran on comparable hosts.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import psutil
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from arbiter.kit.redisclient import connect_redis
from arbiter_tools.devstack.infra import create_topic


def python_loop_ns(iterations: int = 2_000_000, repeats: int = 3) -> float:
    """Nanoseconds per step of a plain Python loop, best of `repeats`: this host's one-core speed today.

    Hosts of one machine kind differ from day to day; with `socket_round_trip_us` and the time
    stolen by the hypervisor it tells whether two runs ran on comparable hosts.
    """
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        total = 0
        for step in range(iterations):
            total += step
        best = min(best, time.perf_counter() - started)
    return round(best / iterations * 1e9, 1)


# The echo of `socket_round_trip_us`: a fresh interpreter, since forking this process (threads,
# an event loop, gRPC) is not safe.
_ECHO = """
import socket, sys
echo = socket.socket(fileno=int(sys.argv[1]))
while byte := echo.recv(1):
    echo.sendall(byte)
"""


def socket_round_trip_us(cpus: tuple[int, int], round_trips: int = 5_000) -> float | None:
    """Microseconds for one byte to go to an echo process and back over a socket pair, best of 3.

    Every hop of the system (Kafka, PostgreSQL, Redis, gRPC) pays this kernel path. `cpus` pins
    this process and the echo to those two CPUs: the same one twice measures system calls and
    context switches, two of them adds waking a sleeping CPU, which a virtual machine may make
    slow (a hypervisor exit when the guest does not poll before halting). None without Linux's
    CPU affinity, or when `cpus` names a CPU this process may not use.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        return None
    mine, theirs = socket.socketpair()
    echo = subprocess.Popen([sys.executable, "-c", _ECHO, str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()
    try:
        os.sched_setaffinity(echo.pid, {cpus[1]})
        os.sched_setaffinity(0, {cpus[0]})
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(round_trips):
                mine.sendall(b"x")
                mine.recv(1)
            best = min(best, time.perf_counter() - started)
        return round(best / round_trips * 1e6, 1)
    finally:
        os.sched_setaffinity(0, allowed)
        mine.close()
        echo.wait(timeout=10)


def cpu_set(text: str) -> set[int]:
    """CPUs named as taskset does ("1", "0,2", "2-3"); empty text names none."""
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def pin(processes: Iterable[psutil.Process], cpus: set[int]) -> int:
    """Every thread of each process and of its children on `cpus` (`taskset -a -p`); threads pinned.

    Threads started later inherit the CPUs of the thread that starts them.
    """
    pinned = 0
    for process in processes:
        for member in (process, *process.children(recursive=True)):
            for thread in member.threads():
                os.sched_setaffinity(thread.id, cpus)
                pinned += 1
    return pinned


class HostTicks(NamedTuple):
    """CPU ticks of the whole machine since boot, every CPU summed (/proc/stat)."""

    total: int
    # Nothing to run, or waiting for a disk.
    idle: int
    # Wanted to run while the hypervisor ran someone else.
    stolen: int


def host_cpu_ticks() -> HostTicks:
    """The machine's CPU ticks since boot, from /proc/stat (all zero without it)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except OSError:
        return HostTicks(0, 0, 0)
    # user nice system idle iowait irq softirq steal [guest guest_nice, already inside user and nice]
    fields += [0] * (8 - len(fields))
    return HostTicks(sum(fields[:8]), fields[3] + fields[4], fields[7])


def stolen_percent(before: HostTicks, after: HostTicks) -> float | None:
    """The share of CPU time the hypervisor gave to others between two `host_cpu_ticks` readings."""
    total = after.total - before.total
    return round((after.stolen - before.stolen) / total * 100, 1) if total > 0 else None


def busy_percent(before: HostTicks, after: HostTicks, cpus: int) -> float | None:
    """How busy the machine was between two readings, in % of one core (up to `cpus` x 100), stolen time apart."""
    total = after.total - before.total
    if total <= 0:
        return None
    idle, stolen = after.idle - before.idle, after.stolen - before.stolen
    return round((total - idle - stolen) / total * cpus * 100, 1)


def host_load(before: HostTicks, after: HostTicks) -> dict[str, Any]:
    """The whole machine over a stage: busy (every process, ours or not, in % of one core) and stolen.

    Beside the per-service CPU of a stage: a stage run at nearly every core's limit queues every
    hop, and a host that steals much or ran others' work (a machine kind shared with other
    servers) explains a slow stage that the services' own figures do not.
    """
    cores = os.cpu_count() or 1
    return {"cores": cores, "busy_percent": busy_percent(before, after, cores),
            "stolen_percent": stolen_percent(before, after)}


async def raw_kafka(bootstrap: str, messages: int, size: int) -> dict[str, Any]:
    """Produce then consume `messages` records of `size` bytes on a scratch topic."""
    topic = await create_topic(bootstrap, f"bench.raw.{uuid.uuid4().hex[:8]}", 4)
    payload = os.urandom(size)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=512 * 1024, acks=1)
    await producer.start()
    try:
        partitions = sorted(await producer.partitions_for(topic))
        started = time.perf_counter()
        sent = 0
        # Whole batches per partition: what the client can push, not the per-record Python overhead.
        while sent < messages:
            futures = []
            for partition in partitions:
                batch = producer.create_batch()
                while sent < messages and batch.append(key=None, value=payload, timestamp=None) is not None:
                    sent += 1
                batch.close()
                futures.append(await producer.send_batch(batch, topic, partition=partition))
                if sent >= messages:
                    break
            await asyncio.gather(*futures)
        produce_seconds = time.perf_counter() - started
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False, group_id=None, max_partition_fetch_bytes=4 * 1024 * 1024)
    await consumer.start()
    try:
        received = 0
        started = time.perf_counter()
        while received < messages and time.perf_counter() - started < 120:
            batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
            received += sum(len(records) for records in batches.values())
        consume_seconds = time.perf_counter() - started
    finally:
        await consumer.stop()
    return {
        "messages": messages, "bytes": size,
        "produce_per_s": round(messages / produce_seconds), "consume_per_s": round(received / consume_seconds),
        "produce_mb_per_s": round(messages * size / produce_seconds / 1e6, 1),
    }


async def raw_redis(url: str, ops: int) -> dict[str, Any]:
    """Pipelined SET+INCR and one-at-a-time GET round trips, through the services' client."""
    client = connect_redis(url)
    try:
        prefix = f"bench:{uuid.uuid4().hex[:6]}:"
        started = time.perf_counter()
        for chunk in range(0, ops, 1000):
            async with client.pipeline(transaction=False) as pipe:
                for i in range(chunk, min(ops, chunk + 1000)):
                    pipe.set(prefix + str(i % 5000), i)
                await pipe.execute()
        pipelined = ops / (time.perf_counter() - started)
        single = min(ops, 10_000)
        started = time.perf_counter()
        for i in range(single):
            await client.get(prefix + str(i % 5000))
        one_by_one = single / (time.perf_counter() - started)
        keys = [key async for key in client.scan_iter(prefix + "*", count=1000)]
        for chunk in range(0, len(keys), 1000):
            await client.delete(*keys[chunk:chunk + 1000])
    finally:
        await client.aclose()
    return {"pipelined_ops_per_s": round(pipelined), "round_trip_ops_per_s": round(one_by_one)}


# The servers beside the services, by the start of their process name (tansu's carries its version):
# where the rest of the two cores goes.
INFRASTRUCTURE_PROCESSES = (
    ("tansu", "tansu"), ("postgres", "postgres (every cluster)"), ("redis-server", "redis (every server)"),
)


def process_cpu_seconds(pid: int | str) -> tuple[str, float]:
    """A process's name and user + system CPU seconds so far, from Linux /proc (OSError once it ended)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    name, after = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
    # utime and stime are fields 14 and 15 of stat, the 12th and 13th after the name.
    return name, (int(after[11]) + int(after[12])) / os.sysconf("SC_CLK_TCK")


def infrastructure_cpu_seconds() -> dict[str, float]:
    """CPU seconds of the live tansu, PostgreSQL and Redis processes (empty without /proc)."""
    totals: dict[str, float] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return totals
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name, seconds = process_cpu_seconds(entry.name)
        except OSError:
            continue  # the process ended meanwhile
        label = next((label for prefix, label in INFRASTRUCTURE_PROCESSES if name.startswith(prefix)), None)
        if label is not None:
            totals[label] = totals.get(label, 0.0) + seconds
    return totals
