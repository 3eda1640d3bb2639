"""Idle system: the CPU the five services and the broker spend with no traffic, per KAFKA_FETCH_MAX_WAIT_MS.

    .venv/bin/python tests/bench/bench_idle_services.py [--fetch-wait-ms 20 100 500] [--seconds 20]

Every consumer asks the broker for records again as soon as a fetch ends; tansu, unlike Apache
Kafka, answers an empty fetch only when its wait ends, so an idle consumer makes 1000 / wait
fetch round trips a second, each decoded in Python by aiokafka. This is the floor a host pays
before any game: the figure to weigh against the latency a shorter wait buys (the system
benchmark runs pairing at 20 ms; production keeps the 500 ms default, which Apache Kafka cuts
short as records arrive).

For each wait, a fresh embedded stack (tansu, Redis; the machine's PostgreSQL on a scratch
database when reachable) and the five services start, settle for `--settle` seconds, then the
CPU of each service and of each server is read over `--seconds`. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from arbiter_tools.devstack.infra import scratch_database
from arbiter_tools.devstack.stack import SERVICE_NAMES, SystemStack
from arbiter_tools.simulator.bench.host import infrastructure_cpu_seconds, process_cpu_seconds


def idle_cpu_percent(fetch_wait_ms: int, settle: float, seconds: float) -> dict[str, float]:
    """Each service's and server's CPU, in % of one core, over `seconds` of an idle system."""
    environ = dict(os.environ)
    with scratch_database(environ, prefix="arbiter_bench_idle"), \
            tempfile.TemporaryDirectory(prefix="bench-idle-") as state, \
            SystemStack(Path(state), free_ports=True, environ=environ, say=lambda _: None,
                        extra_env={"KAFKA_FETCH_MAX_WAIT_MS": str(fetch_wait_ms)}) as stack:
        stack.start_infrastructure()
        stack.start_services()
        stack.wait_serving(timeout=120)
        time.sleep(settle)
        pids = {name: service.process.pid for name, service in stack.services.items() if service.process}

        def cpu_seconds() -> dict[str, float]:
            return {name: process_cpu_seconds(pid)[1] for name, pid in pids.items()} | infrastructure_cpu_seconds()

        before = cpu_seconds()
        began = time.monotonic()
        time.sleep(seconds)
        after = cpu_seconds()
        elapsed = time.monotonic() - began
    return {name: round((after[name] - before[name]) / elapsed * 100, 1) for name in after if name in before}


def main() -> None:
    """Parse the options and print a line per fetch wait."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetch-wait-ms", type=int, nargs="+", default=[20, 100, 500])
    parser.add_argument("--settle", type=float, default=8.0, help="seconds between serving and measuring")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds measured")
    args = parser.parse_args()
    print(f"idle CPU, % of one core over {args.seconds:g} s, {os.cpu_count()} CPUs:")
    for wait in args.fetch_wait_ms:
        figures = idle_cpu_percent(wait, args.settle, args.seconds)
        services = sum(value for name, value in figures.items() if name in SERVICE_NAMES)
        print(f"  KAFKA_FETCH_MAX_WAIT_MS {wait:5d}: services {services:5.1f} in all {figures}")


if __name__ == "__main__":
    main()
