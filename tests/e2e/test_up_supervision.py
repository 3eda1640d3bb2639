"""`arbiter up` looks after what it starts (issue 40).

- A hang-up (a closed terminal, a dropped SSH session) stops every child as Ctrl-C does, and frees
  their ports: main's `arbiter up` died of SIGHUP and left them all running.
- Its broker (tansu behind the Kafka gate, memory storage) SIGKILLed: the supervisor starts it again,
  empty, on its port and puts back what the outboxes had published; the services make their topics
  anew and are all ready again. Main's restarted nothing.
- A crashed service is started again (and `arbiter up` says so); a run killed outright (SIGKILL,
  nothing stopped) leaves its children running, and the next run on the same state folder finds and
  stops them before it starts its own: main's did neither.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import psutil
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaError

from arbiter.kit.events import ALL_TOPICS
from arbiter_tools.devstack.processes import port_open
from arbiter_tools.devstack.stack import _serving as ready
from tests.support.polling import eventually_blocking

ROOT = Path(__file__).resolve().parents[2]


class Up:
    """One `arbiter up` in a subprocess, its output collected by a thread."""

    def __init__(self, state_dir: Path, database_url: str, *options: str) -> None:
        env = {**os.environ, "DATABASE_URL": database_url}
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
        env.pop("REDIS_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "arbiter_tools.cli.main", "up", "--free-ports", "--state-dir", str(state_dir),
             *options],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = 90.0) -> None:
        eventually_blocking(lambda: self.output, f"{text!r} printed", timeout=timeout,
                            until=lambda output: text in output or self.process.poll() is not None)
        assert text in self.output, f"exited before {text!r}:\n{self.output}"

    def grpc_addresses(self) -> dict[str, str]:
        """Each service's gRPC address, as printed."""
        return {words[0]: words[2] for words in (line.split() for line in self.lines)
                if len(words) > 2 and words[1] == "grpc"}

    def metrics_urls(self) -> dict[str, str]:
        """Each service's /metrics, as printed."""
        return {words[0]: words[4] for words in (line.split() for line in self.lines)
                if len(words) > 4 and words[1] == "grpc" and words[3] == "metrics"}

    def kafka(self) -> str:
        """The broker's address, as printed."""
        return next(words[1] for words in (line.split() for line in self.lines) if words[:1] == ["kafka"])

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def ports(self) -> list[int]:
        """The ports its children listen on."""
        ports = set()
        for child in self.children():
            try:
                ports |= {c.laddr.port for c in child.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
            except psutil.NoSuchProcess:
                continue
        return sorted(ports)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(60)
        self._reader.join(10)


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def wait_gone(processes: list[psutil.Process], timeout: float = 60.0) -> None:
    eventually_blocking(lambda: [c.cmdline() for c in alive(processes)], "every process gone (last seen: those left)",
                        timeout=timeout, until=lambda left: left == [], tolerate=(psutil.NoSuchProcess,))


def broker_topics(bootstrap: str, state_dir: Path) -> set[str]:
    """The topics the broker has, asked as the run's operator."""
    password = (state_dir / "kafka-operator-password").read_text().strip()

    async def ask() -> set[str]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="operator",
                                    sasl_plain_password=password, request_timeout_ms=5000)
        await consumer.start()
        try:
            return set(await consumer.topics())
        finally:
            await consumer.stop()

    try:
        return asyncio.run(ask())
    except (KafkaError, OSError, TimeoutError):
        return set()


def topics_recreated(url: str) -> float:
    with urllib.request.urlopen(url, timeout=5) as reply:
        lines = reply.read().decode().splitlines()
    counted = [line for line in lines if line.startswith("arbiter_broker_topics_recreated_total")]
    return sum(float(line.rsplit(" ", 1)[1]) for line in counted)


def test_sighup_stops_every_child_and_frees_their_ports(tmp_path, database_url) -> None:
    up = Up(tmp_path / "state", database_url)
    try:
        up.wait_for("all five services SERVING")
        children, ports = up.children(), up.ports()
        # Five services, the lag exporter, tansu, the Kafka gate, redis-server.
        assert len(children) >= 9, up.output
        assert len(ports) >= 14, ports  # gRPC and /metrics of each service, the exporter, tansu, the gate, Redis
        up.process.send_signal(signal.SIGHUP)
        up.process.wait(90)
    finally:
        up.stop()
    wait_gone(children)
    assert [port for port in ports if port_open("127.0.0.1", port)] == []
    assert up.process.returncode == 0, up.output
    assert "stopping" in up.output and "Traceback" not in up.output, up.output


def test_a_killed_broker_is_started_again_and_every_service_is_ready_again(tmp_path, database_url) -> None:
    up = Up(tmp_path / "state", database_url)
    try:
        up.wait_for("all five services SERVING")
        tansu = next(c for c in up.children() if c.name().startswith("tansu"))
        os.kill(tansu.pid, signal.SIGKILL)
        up.wait_for("supervisor: tansu restarted", timeout=60)
        up.wait_for("supervisor: republishing", timeout=60)
        # The services notice the loss at their next readiness check and make the topics anew, unless a
        # consumer's metadata request made tansu create one first (it creates what a client names): so
        # what must hold is every topic back and every service ready again.
        addresses, metrics = up.grpc_addresses(), up.metrics_urls()
        assert len(addresses) == 5 and len(metrics) == 5, up.output
        wanted = {topic.name for topic in ALL_TOPICS}

        def not_back() -> dict[str, list]:
            return {"unready": sorted(name for name, address in addresses.items() if not ready(address)),
                    "topics missing": sorted(wanted - broker_topics(up.kafka(), tmp_path / "state")),
                    "topics made again by the services": [topics_recreated(url) for url in metrics.values()]}

        eventually_blocking(not_back, "every service ready and every topic back after the broker came back",
                            timeout=90, every=0.5,
                            until=lambda left: not left["unready"] and not left["topics missing"])
        assert "tansu exited with -9; restarting it in 1 s" in up.output
    finally:
        up.stop()
    assert up.process.returncode == 0, up.output


def test_a_crashed_service_is_restarted_and_a_killed_runs_leftovers_are_cleared(tmp_path, database_url) -> None:
    state = tmp_path / "state"
    first = Up(state, database_url, "--no-auth")
    try:
        first.wait_for("all five services SERVING")
        rating = next(c for c in first.children() if "services.rating.main" in " ".join(c.cmdline()))
        os.kill(rating.pid, signal.SIGKILL)
        first.wait_for("supervisor: rating restarted", timeout=60)
        assert "rating exited with -9; restarting it in" in first.output
        assert (state / "logs" / "supervisor.log").read_text().count("rating restarted") == 1
        orphans = first.children()
        # Killed outright: nothing stops its children, which keep their ports.
        first.process.kill()
        first.process.wait(10)
    finally:
        first.stop()
    assert len(alive(orphans)) >= 8
    second = Up(state, database_url, "--no-auth")
    try:
        second.wait_for("all five services SERVING")
        assert "stopped what an earlier run left running" in second.output, second.output
        wait_gone(orphans, 5)
    finally:
        second.stop()
    assert second.process.returncode == 0, second.output
