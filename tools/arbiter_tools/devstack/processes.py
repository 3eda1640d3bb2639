"""Child processes of the embedded stack: start, wait for a port, stop with a signal."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from arbiter.kit.eventloop import STOP_SIGNALS

# Ports handed out start here: above the well-known servers a machine of this kind runs (5432,
# 6379, 9092, RabbitMQ's 25672 is probed like any other).
_FIRST_HANDED_PORT = 20_000
# Linux's own default, for a system that does not say.
_DEFAULT_EPHEMERAL = (32_768, 60_999)


def ephemeral_ports(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The range the kernel picks outgoing connections' source ports (and bind-to-0 ports) from."""
    try:
        with open(path, encoding="ascii") as ports:
            low, high = (int(value) for value in ports.read().split())
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL
    return low, high


def free_port(host: str = "127.0.0.1", rng: random.Random | None = None, reservations: Path | None = None) -> int:
    """A TCP port nobody listens on right now, below the kernel's ephemeral range when there is room.

    A port from bind-to-0 comes from the range the kernel also gives every outgoing connection
    as its source port: between this probe and the server's own bind, any process's client
    connection may take it (a test stack's service once failed to bind its gRPC port so, with
    two test workers connecting to their brokers and databases). Below the range the kernel
    gives a port to nobody unasked; a random one, probed and reserved, keeps two callers apart.
    """
    low, _high = ephemeral_ports()
    pick = rng or random.Random()
    if low - _FIRST_HANDED_PORT >= 1_000:
        for _ in range(100):
            port = pick.randrange(_FIRST_HANDED_PORT, low)
            if _bindable(host, port) and _reserve(port, reservations or _RESERVATIONS):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# A probe proves a port free only until its server binds it, seconds later once the service has
# started: two test workers starting stacks at once could both pick one port in between (a
# pairing service once reached another stack's server at its rating address). A file per
# handed port, created exclusively, keeps every caller on the machine off it for a while.
_RESERVATIONS = Path(tempfile.gettempdir()) / "arbiter-ports"
_RESERVATION_SECONDS = 600.0


def _age_seconds(marker: Path) -> float | None:
    """How long ago `marker` was made; None when there is none (another caller may unlink it at any moment)."""
    try:
        return time.time() - marker.stat().st_mtime
    except FileNotFoundError:
        return None


def _reserve(port: int, directory: Path) -> bool:
    marker = directory / str(port)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        age = _age_seconds(marker)
        if age is not None:
            if age < _RESERVATION_SECONDS:
                return False
            marker.unlink(missing_ok=True)  # stale: its server bound it long ago, or never will
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        return True  # no shared directory to reserve in: the probe alone decides, as before
    return True


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(host: str, port: int, timeout: float, process: ManagedProcess | None = None) -> None:
    """Block until host:port accepts connections, or raise naming what failed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(host, port):
            return
        if process is not None and process.exited():
            raise RuntimeError(f"{process.name} exited with {process.returncode()}; see {process.log_path}")
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f} s")


@contextmanager
def signals_deferred(say: Callable[[str], None]) -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver the first one held.

    The children run in sessions of their own, so they never see the operator's Ctrl-C: a second
    one cut a stop short and left servers running with nobody to stop them. Only the main thread
    can set handlers; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread() or getattr(
            signal.getsignal(signal.SIGINT), "defers_stop", False):
        # Elsewhere than the main thread no handler can be set; inside a deferral the outer one holds.
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        if not held:
            say("already stopping: waiting for every process to end")
        held.append(signum)

    hold.defers_stop = True  # type: ignore[attr-defined]

    previous = {sig: signal.signal(sig, hold) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])


@dataclass(frozen=True)
class Niceness:
    """What `set_niceness` changed: each thread's previous niceness, and each scheduling group's."""

    threads: Mapping[int, int] = field(default_factory=dict)
    # By a member's pid: an autogroup is one per session, and is written through any of its processes.
    autogroups: Mapping[int, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.threads or self.autogroups)


def autogroups_enabled(path: str = "/proc/sys/kernel/sched_autogroup_enabled") -> bool:
    """Whether the scheduler groups processes by session (autogroups).

    With autogroups on, it shares the CPU between sessions first and only then between the
    threads of one session by their niceness: a thread's niceness alone does nothing against a
    process of another session.
    """
    try:
        with open(path, encoding="ascii") as enabled:
            return enabled.read().strip() == "1"
    except FileNotFoundError:
        return False


def autogroup_niceness(pid: int | str, proc: str = "/proc") -> tuple[str, int] | None:
    """The autogroup of `pid` and its niceness; None if it has none of its own, has ended, or the kernel has none.

    The kernel prints nothing for a process of the default group, which holds every process
    descended from init without a `setsid` on the way (a CI runner's, for one): the scheduler
    weighs those as the root group, which no autogroup file can renice.
    """
    try:
        with open(f"{proc}/{pid}/autogroup", encoding="ascii") as autogroup:
            fields = autogroup.read().split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if not fields:
        return None
    name, _word, niceness = fields
    return name, int(niceness)


def _set_autogroup_niceness(pid: int, niceness: int) -> None:
    with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as autogroup:
        autogroup.write(str(niceness))


def set_niceness(pids: Sequence[int], niceness: int, by_session: bool | None = None) -> Niceness:
    """Give every thread of each process `niceness`, and its session's autogroup too unless it is ours.

    Linux keeps a niceness per thread, and a process's threads started before the change keep
    theirs. Where the scheduler groups by session (`by_session`, by default `autogroups_enabled()`),
    a child in a session of its own (`ManagedProcess`) competes with others as its whole autogroup,
    so that group is niced as well; one shared with this process is left alone, or the caller
    would slow itself down.
    """
    threads: dict[int, int] = {}
    autogroups: dict[int, int] = {}
    if by_session is None:
        by_session = autogroups_enabled()
    own = autogroup_niceness("self") if by_session else None
    niced_groups: set[str] = set()
    for pid in pids:
        try:
            members = [int(task.name) for task in Path(f"/proc/{pid}/task").iterdir()]
        except FileNotFoundError:
            continue  # the process ended
        for thread in members:
            try:
                before = os.getpriority(os.PRIO_PROCESS, thread)
                os.setpriority(os.PRIO_PROCESS, thread, niceness)
            except ProcessLookupError:
                continue
            threads[thread] = before
        group = autogroup_niceness(pid) if by_session else None
        if group is None or (own is not None and group[0] == own[0]) or group[0] in niced_groups:
            continue
        try:
            _set_autogroup_niceness(pid, niceness)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # ended, or another user's
        niced_groups.add(group[0])
        autogroups[pid] = group[1]
    return Niceness(threads, autogroups)


def restore_niceness(previous: Niceness) -> list[int]:
    """Put each thread and autogroup of `previous` back to its niceness; returns the ids it may not raise again.

    Only a privileged user (CAP_SYS_NICE) may lower a niceness; the others stay where they are.
    """
    refused = []
    for thread, niceness in previous.threads.items():
        try:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
        except ProcessLookupError:
            continue
        except PermissionError:
            refused.append(thread)
    for pid, niceness in previous.autogroups.items():
        try:
            _set_autogroup_niceness(pid, niceness)
        except (FileNotFoundError, ProcessLookupError):
            continue
        except PermissionError:
            refused.append(pid)
    return refused


class ManagedProcess:
    """A child process in its own process group, logging to a file."""

    def __init__(self, name: str, command: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagedProcess:
        """Launch the process (stdout and stderr to the log file)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, cwd=self.cwd, start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        """The process id."""
        assert self.popen is not None, f"{self.name} was not started"
        return self.popen.pid

    def exited(self) -> bool:
        """Whether the process has ended."""
        return self.popen is not None and self.popen.poll() is not None

    def returncode(self) -> int | None:
        """The exit code, or None while running."""
        return None if self.popen is None else self.popen.poll()

    def kill(self) -> None:
        """SIGKILL the whole process group at once (fault tests)."""
        self._signal_group(signal.SIGKILL)
        if self.popen is not None:
            self.popen.wait(timeout=10)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15.0) -> int | None:
        """Send `sig`, wait up to `timeout`, then SIGKILL what is left; return the exit code."""
        if self.popen is None or self.exited():
            return self.returncode()
        self._signal_group(sig)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.returncode()

    def _signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)


def kill_and_restart(process: ManagedProcess, port: int, down_seconds: float, host: str = "127.0.0.1") -> None:
    """SIGKILL `process`, leave it down `down_seconds`, start the same command again; return once it listens."""
    process.kill()
    time.sleep(down_seconds)
    process.start()
    wait_for_port(host, port, 30, process)
