"""KillDriver kills every service at least once, whatever the seed: its first kills take each in turn."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from arbiter_tools.chaos import KillDriver

NAMES = ("openings", "rating", "clock", "arena", "pairing")


class RecordingStack:
    """Only what KillDriver calls on a SystemStack: who was killed and started, in order."""

    def __init__(self) -> None:
        self.services = dict.fromkeys(NAMES)
        self.killed: list[str] = []
        self.started: list[str] = []

    def kill_service(self, name: str) -> None:
        self.killed.append(name)

    def start_service(self, name: str) -> None:
        self.started.append(name)

    def wait_serving(self, timeout: float, names: list[str]) -> float:
        return 0.0


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32))
def test_the_first_kills_take_every_service_once(seed: int) -> None:
    stack = RecordingStack()
    driver = KillDriver(stack, seed=seed, down=(0.0, 0.0))  # type: ignore[arg-type]
    assert driver.unkilled == list(NAMES)
    for _ in NAMES:
        driver.kill_one()
    assert sorted(stack.killed) == sorted(NAMES) and stack.started == stack.killed
    assert driver.unkilled == [] and driver.counts.kills == len(NAMES)
    driver.kill_one()
    assert stack.killed[-1] in NAMES


def test_a_named_kill_counts_for_the_round() -> None:
    stack = RecordingStack()
    driver = KillDriver(stack, seed=1, down=(0.0, 0.0))  # type: ignore[arg-type]
    driver.kill_one("clock")
    for _ in range(len(NAMES) - 1):
        driver.kill_one()
    assert sorted(stack.killed) == sorted(NAMES)
