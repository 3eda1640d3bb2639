"""`arbiter simulate` as an operator runs it, against a running system: two runs at once, and Ctrl-C.

Two runs with different `--prefix` on one system each play their small scenario to the end: each
run's play site reads in a consumer group of its own (`<prefix>playsite`), where a shared group
would split the partitions between them and leave each without the games handed to the other.
A run interrupted with SIGINT (Ctrl-C) stops its clients and exits with 130, saying so in one
line, without a traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from arbiter_tools.devstack.stack import SystemStack

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.timeout(420)


def simulate(stack: SystemStack, prefix: str, *options: str) -> subprocess.Popen[str]:
    """`arbiter simulate --prefix PREFIX OPTIONS...` against `stack`, its addresses taken from the environment."""
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": stack.kafka_bootstrap, "TIME_SCALE": repr(stack.time_scale),
           "TIME_ORIGIN": stack.time_origin, "AUTH_SIGNING_KEY": stack.auth_signing_key,
           **{f"{name.upper()}_GRPC_ADDR": service.grpc_address for name, service in stack.services.items()}}
    return subprocess.Popen(
        [sys.executable, "-m", "arbiter_tools.cli.main", "simulate", "--prefix", prefix, "--think", "1", "2",
         *options], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def consumer_groups(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {group for group, _protocol in await admin.list_consumer_groups()}
    finally:
        await admin.close()


def test_two_runs_on_one_system_each_read_in_a_group_of_their_own_and_finish(system: SystemStack) -> None:
    prefixes = [f"{side}{uuid.uuid4().hex[:5]}-" for side in ("a", "b")]
    runs = [simulate(system, prefix, "--json", "--timeout", "300") for prefix in prefixes]
    outputs = [run.communicate(timeout=360) for run in runs]
    for prefix, run, (out, err) in zip(prefixes, runs, outputs, strict=True):
        assert run.returncode == 0, f"{prefix}: exit {run.returncode}\n{err[-3000:]}"
        report = json.loads(out)
        statuses = {part["key"]: part["status"] for part in report["parts"]}
        assert statuses == {"rr5": "finished", "arena8": "finished"}, (prefix, statuses)
    groups = asyncio.run(consumer_groups(system.kafka_bootstrap))
    assert {f"{prefix}playsite" for prefix in prefixes} <= groups


def test_ctrl_c_stops_a_run_with_130_and_no_traceback(system: SystemStack) -> None:
    run = simulate(system, f"c{uuid.uuid4().hex[:5]}-", "--timeout", "300")
    try:
        assert run.stdout is not None
        first = run.stdout.readline()  # the live view's first progress line: the run is under way
        assert first.startswith("["), first
        run.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    print(f"\narbiter simulate stopped {time.monotonic() - started:.1f} s after SIGINT")
    assert run.returncode == 130, f"exit {run.returncode}\n{err}"
    assert "Traceback" not in err, err
    assert "arbiter simulate: stopped" in err, err
