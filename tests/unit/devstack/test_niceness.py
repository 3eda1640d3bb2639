"""set_niceness / restore_niceness: every thread of a process and its own session's scheduling group, and back.

The benchmark nices its off-path services; each runs in a session of its own (ManagedProcess), and
where the kernel groups by session (autogroups) a thread's niceness alone weighs nothing against
another session's processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arbiter_tools.devstack.processes import autogroup_niceness, autogroups_enabled, restore_niceness, set_niceness
from tests.support.polling import eventually_blocking

# A process with a second thread, started before any change (Linux keeps a niceness per thread).
TWO_THREADS = "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)"


def threads_of(pid: int) -> list[int]:
    return sorted(int(task.name) for task in Path(f"/proc/{pid}/task").iterdir())


@contextmanager
def two_thread_child(own_session: bool) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", TWO_THREADS], start_new_session=own_session)
    try:
        eventually_blocking(lambda: len(threads_of(process.pid)) >= 2, "the child's second thread", every=0.01)
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A child in this test's session: its scheduling group is ours."""
    with two_thread_child(own_session=False) as process:
        yield process


@pytest.fixture
def session_child() -> Iterator[subprocess.Popen[bytes]]:
    """A child in a session of its own, as the stack starts its services."""
    with two_thread_child(own_session=True) as process:
        yield process


def test_every_thread_gets_the_niceness_and_gets_its_own_back(child: subprocess.Popen[bytes]) -> None:
    threads = threads_of(child.pid)
    before = {thread: os.getpriority(os.PRIO_PROCESS, thread) for thread in threads}
    previous = set_niceness([child.pid], 10)
    assert previous.threads == before
    # Its scheduling group is this process's own: niced, it would slow the caller down as well.
    assert previous.autogroups == {}
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
    assert sorted(previous.threads) == threads_of(child.pid)
    child.kill()
    child.wait()
    assert restore_niceness(previous) == []


# A process in a session of its own has an autogroup on every kernel built with them, whether the
# scheduler uses them now or not; the others may be in the default group (see below).
NO_AUTOGROUPS = "this kernel has no autogroups (/proc/PID/autogroup): this machine kind's has"


def test_a_child_in_a_session_of_its_own_has_its_scheduling_group_niced_and_put_back(
        session_child: subprocess.Popen[bytes]) -> None:
    group = autogroup_niceness(session_child.pid)
    assert group is not None, NO_AUTOGROUPS
    # This test's own group is another one, or none at all where it runs in the default group.
    own = autogroup_niceness("self")
    assert own is None or group[0] != own[0]
    previous = set_niceness([session_child.pid], 10, by_session=True)
    assert previous.autogroups == {session_child.pid: group[1]}
    assert autogroup_niceness(session_child.pid) == (group[0], 10)
    assert {os.getpriority(os.PRIO_PROCESS, thread) for thread in threads_of(session_child.pid)} == {10}
    refused = restore_niceness(previous)
    if os.geteuid() == 0:
        assert refused == []
        assert autogroup_niceness(session_child.pid) == group
    else:  # lowering a group's niceness takes CAP_SYS_NICE too
        assert session_child.pid in refused
        assert autogroup_niceness(session_child.pid) == (group[0], 10)


def test_processes_sharing_a_session_nice_their_group_once() -> None:
    # A shell in a session of its own and the sleep it started there, as a service and its own child.
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                             start_new_session=True)
    try:
        assert shell.stdout is not None
        sleeper = int(shell.stdout.readline())
        group = autogroup_niceness(shell.pid)
        assert group is not None, NO_AUTOGROUPS
        assert autogroup_niceness(sleeper) == group
        previous = set_niceness([shell.pid, sleeper], 7, by_session=True)
        assert previous.autogroups == {shell.pid: group[1]}
        assert autogroup_niceness(sleeper) == (group[0], 7)
        restore_niceness(previous)
    finally:
        os.killpg(shell.pid, 9)
        shell.wait()


def test_nothing_changed_is_false_and_an_ended_process_changes_nothing() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    previous = set_niceness([ended.pid], 10)
    assert not previous and previous.threads == {} and previous.autogroups == {}
    assert restore_niceness(previous) == []


def test_where_the_scheduler_does_not_group_by_session_only_the_threads_are_niced(
        session_child: subprocess.Popen[bytes]) -> None:
    group = autogroup_niceness(session_child.pid)
    previous = set_niceness([session_child.pid], 10, by_session=False)
    assert previous.autogroups == {}
    assert autogroup_niceness(session_child.pid) == group
    assert {os.getpriority(os.PRIO_PROCESS, thread) for thread in threads_of(session_child.pid)} == {10}
    restore_niceness(previous)


@pytest.mark.parametrize(("content", "enabled"), [("1\n", True), ("0\n", False), (None, False)])
def test_autogroups_are_on_when_the_kernel_says_1(tmp_path: Path, content: str | None, enabled: bool) -> None:
    setting = tmp_path / "sched_autogroup_enabled"
    if content is not None:  # None: a kernel built without them has no such file
        setting.write_text(content)
    assert autogroups_enabled(str(setting)) is enabled


@pytest.mark.parametrize(("content", "group"), [
    ("/autogroup-85 nice 3\n", ("/autogroup-85", 3)),
    # The kernel prints nothing for the default group: init's, and that of whatever descends from it
    # without a setsid on the way, as a CI runner may.
    ("", None),
    (None, None),  # the process ended, or the kernel has no autogroups
])
def test_a_process_s_autogroup_is_read_from_proc(tmp_path: Path, content: str | None,
                                                 group: tuple[str, int] | None) -> None:
    (tmp_path / "4242").mkdir()
    if content is not None:
        (tmp_path / "4242" / "autogroup").write_text(content)
    assert autogroup_niceness(4242, proc=str(tmp_path)) == group
