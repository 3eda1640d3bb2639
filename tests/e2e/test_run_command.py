"""The README run command: all five services SERVING with /metrics, the lag exporter beside them, and Ctrl-C
leaves nothing behind.

An impatient operator presses Ctrl-C again, or `timeout` sends SIGTERM to the whole process group
on top of it: the stop still runs to its end, without a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from tests.support.polling import eventually_blocking

ROOT = Path(__file__).resolve().parents[2]
START_BOUND_SECONDS = 300


def test_arbiter_up_serves_all_five_and_ctrl_c_stops_every_process_even_when_pressed_again(
    tmp_path, database_url
) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.pop("REDIS_URL", None)
    started = time.monotonic()
    up = subprocess.Popen(
        [sys.executable, "-m", "arbiter_tools.cli.main", "up", "--free-ports", "--state-dir", str(tmp_path / "state")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        assert up.stdout is not None
        for line in up.stdout:
            lines.append(line)
            # The bound only keeps a start that never ends from holding the test (it measures nothing).
            if "SERVING" in line or time.monotonic() - started > START_BOUND_SECONDS:
                break
        output = "".join(lines)
        assert "all five services SERVING" in output, output
        print(f"\narbiter up: all five SERVING after {time.monotonic() - started:.1f} s "
              f"(load average {os.getloadavg()[0]:.2f})")
        metrics_urls = {line.split()[0]: word for line in lines for word in line.split() if word.endswith("/metrics")}
        assert len(metrics_urls) == 6, output
        for name, url in metrics_urls.items():
            with urllib.request.urlopen(url, timeout=5) as reply:
                body = reply.read()
            # The services' own series; the broker's view of their consumer groups (kafka-exporter's names).
            assert (
                b"# TYPE kafka_consumergroup_lag gauge" if name == "lag" else b"arbiter_grpc_requests_total"
            ) in body
        children = psutil.Process(up.pid).children(recursive=True)
        assert len(children) >= 8  # five services, the lag exporter, tansu, redis-server
    finally:
        up.send_signal(signal.SIGINT)
        # Pressed again once the stop is under way: a busy host may not run the first handler for a
        # while, and signals sent before it runs merge into one.
        said_stopping = _read_until(up, "stopping")
        up.send_signal(signal.SIGTERM)
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=60)
        rest = said_stopping + rest

    def survivors() -> list[psutil.Process]:
        return [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]

    eventually_blocking(lambda: [c.cmdline() for c in survivors()], "every child gone (last seen: those left behind)",
                        until=lambda left: left == [], tolerate=(psutil.NoSuchProcess,))
    assert up.returncode == 0, rest
    assert "stopping" in rest and "already stopping" in rest, rest
    assert "Traceback" not in rest, rest


def _read_until(up: subprocess.Popen[str], word: str) -> str:
    """What `up` prints up to and including the first line holding `word` (all of it, if it ends first)."""
    assert up.stdout is not None
    read: list[str] = []
    for line in up.stdout:
        read.append(line)
        if word in line:
            break
    return "".join(read)
