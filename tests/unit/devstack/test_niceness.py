"""set_niceness / restore_niceness: every thread of a process, and back (the benchmark's off-path services)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arbiter.devstack.processes import restore_niceness, set_niceness

# A process with a second thread, started before any change (Linux keeps a niceness per thread).
TWO_THREADS = "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)"


def threads_of(pid: int) -> list[int]:
    return sorted(int(task.name) for task in Path(f"/proc/{pid}/task").iterdir())


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", TWO_THREADS])
    try:
        deadline = time.monotonic() + 10
        while len(threads_of(process.pid)) < 2:
            assert time.monotonic() < deadline, "the child never started its second thread"
            time.sleep(0.01)
        yield process
    finally:
        process.kill()
        process.wait()


def test_every_thread_gets_the_niceness_and_gets_its_own_back(child: subprocess.Popen[bytes]) -> None:
    threads = threads_of(child.pid)
    before = {thread: os.getpriority(os.PRIO_PROCESS, thread) for thread in threads}
    previous = set_niceness([child.pid], 10)
    assert previous == before
    assert {os.getpriority(os.PRIO_PROCESS, thread) for thread in threads} == {10}
    refused = restore_niceness(previous)
    if os.geteuid() == 0:
        assert refused == []
        assert {thread: os.getpriority(os.PRIO_PROCESS, thread) for thread in threads} == before
    else:  # only CAP_SYS_NICE may lower a niceness: said, not raised
        assert sorted(refused) == threads


def test_ended_processes_and_threads_are_skipped(child: subprocess.Popen[bytes]) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    previous = set_niceness([ended.pid, child.pid], 5)
    assert sorted(previous) == threads_of(child.pid)
    child.kill()
    child.wait()
    assert restore_niceness(previous) == []
