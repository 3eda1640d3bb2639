"""Repeated warnings and errors are written once per window, the next one carrying how many were held back (a
consumer whose broker is gone would otherwise write the same error on every retry for as long as the outage lasts)."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from arbiter.kit.logs import RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(msg: str, level: int = logging.ERROR, name: str = "aiokafka", *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_a_repeat_within_the_window_is_held_back_and_counted_on_the_next_one_written() -> None:
    clock = Clock()
    repeats = RepeatFilter(10.0, clock)
    assert repeats.filter(record("Unable connect to node with id %s", logging.ERROR, "aiokafka", 1))
    held = [repeats.filter(record("Unable connect to node with id %s", logging.ERROR, "aiokafka", n))
            for n in range(99)]
    assert not any(held)
    clock.now = 10.0
    later = record("Unable connect to node with id %s", logging.ERROR, "aiokafka", 1)
    assert repeats.filter(later)
    assert later.suppressed == 99  # type: ignore[attr-defined]
    clock.now = 25.0
    quiet = record("Unable connect to node with id %s", logging.ERROR, "aiokafka", 1)
    assert repeats.filter(quiet) and not hasattr(quiet, "suppressed")


def test_kinds_are_apart_and_info_lines_always_pass() -> None:
    repeats = RepeatFilter(10.0, Clock())
    assert repeats.filter(record("a"))
    assert repeats.filter(record("b"))
    assert repeats.filter(record("a", logging.WARNING))
    assert repeats.filter(record("a", logging.ERROR, "faststream"))
    assert not repeats.filter(record("a"))
    assert all(repeats.filter(record("events handled", logging.INFO)) for _ in range(5))


def test_lines_about_different_things_are_different_kinds_and_old_kinds_are_forgotten() -> None:
    clock = Clock()
    repeats = RepeatFilter(10.0, clock, max_kinds=3)
    lines = []
    for offset in range(3):
        line = record("record set aside")
        line.offset = offset  # what `extra=` sets
        lines.append(line)
    assert all(repeats.filter(line) for line in lines)
    same = record("record set aside")
    same.offset = 2
    assert not repeats.filter(same)
    clock.now = 11.0
    assert repeats.filter(record("another"))
    assert len(repeats._kinds) == 1


def test_a_window_of_zero_writes_every_line() -> None:
    repeats = RepeatFilter(0.0, Clock())
    assert all(repeats.filter(record("same")) for _ in range(5))


@given(st.lists(st.floats(min_value=0, max_value=0.5), min_size=1, max_size=200))
def test_written_plus_held_back_is_every_line(gaps: list[float]) -> None:
    clock = Clock()
    repeats = RepeatFilter(1.0, clock)
    written = held_counted = 0
    for gap in gaps:
        clock.now += gap
        line = record("same")
        if repeats.filter(line):
            written += 1
            held_counted += getattr(line, "suppressed", 0)
    held_pending = sum(seen.suppressed for seen in repeats._kinds.values())
    assert written + held_counted + held_pending == len(gaps)
    assert written <= clock.now / 1.0 + 1
