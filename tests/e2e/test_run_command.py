"""The README run command: all five services SERVING with /metrics, and Ctrl-C leaves nothing behind.

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

ROOT = Path(__file__).resolve().parents[2]


def test_arbiter_up_serves_all_five_and_ctrl_c_stops_every_process_even_when_pressed_again(tmp_path, database_url) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.pop("REDIS_URL", None)
    started = time.monotonic()
    up = subprocess.Popen(
        [sys.executable, "-m", "arbiter.cli.main", "up", "--free-ports", "--state-dir", str(tmp_path / "state")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        assert up.stdout is not None
        for line in up.stdout:
            lines.append(line)
            if "SERVING" in line or time.monotonic() - started > 60:
                break
        elapsed = time.monotonic() - started
        output = "".join(lines)
        assert "all five services SERVING" in output, output
        assert elapsed < 60, output
        metrics_urls = [word for line in lines for word in line.split() if word.endswith("/metrics")]
        assert len(metrics_urls) == 5, output
        for url in metrics_urls:
            with urllib.request.urlopen(url, timeout=5) as reply:
                assert b"arbiter_grpc_requests_total" in reply.read() or reply.status == 200
        children = psutil.Process(up.pid).children(recursive=True)
        assert len(children) >= 7  # five services, tansu, redis-server
    finally:
        up.send_signal(signal.SIGINT)
        up.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the services are being stopped one after another now
        up.send_signal(signal.SIGINT)
        rest, _ = up.communicate(timeout=60)
    time.sleep(0.5)
    survivors = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert survivors == [], f"left behind: {[c.cmdline() for c in survivors]}"
    assert up.returncode == 0, rest
    assert "stopping" in rest and "already stopping" in rest, rest
    assert "Traceback" not in rest, rest
