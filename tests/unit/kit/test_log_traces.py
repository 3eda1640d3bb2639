"""Every JSON log line names the chain(s) of the work it was written for (arbiter.kit.logs, arbiter.kit.trace)."""

from __future__ import annotations

import json
import logging

from arbiter.kit.logs import JsonFormatter, configure_logging
from arbiter.kit.trace import TraceScope, enter, leave, tracing

log = logging.getLogger("tests.trace")


def test_a_line_written_for_one_chain_names_it(service_log) -> None:
    with tracing("t-1"):
        log.info("rated", extra={"game_id": "g-1"})
    [line] = service_log.lines()
    assert (line["msg"], line["trace_id"], line["game_id"]) == ("rated", "t-1", "g-1")
    assert "trace_ids" not in line and not any(key.startswith("_") for key in line)


def test_a_line_written_for_a_batch_of_several_chains_names_each_once(service_log) -> None:
    token = enter(TraceScope(["t-1", "t-2", "t-1"]))
    try:
        log.warning("batch step failed")
    finally:
        leave(token)
    [line] = service_log.lines()
    assert line["trace_ids"] == ["t-1", "t-2"] and "trace_id" not in line


def test_a_line_about_one_event_of_a_batch_names_that_events_chain(service_log) -> None:
    token = enter(TraceScope(["t-1", "t-2"]))
    try:
        log.warning("unratable GameFinished ignored", extra={"trace_id": "t-2"})
    finally:
        leave(token)
    [line] = service_log.lines()
    assert line["trace_id"] == "t-2" and "trace_ids" not in line


def test_a_line_outside_any_chain_has_no_trace_field(service_log) -> None:
    log.info("service ready")
    [line] = service_log.lines()
    assert "trace_id" not in line and "trace_ids" not in line


def test_a_record_written_later_from_other_work_keeps_the_chain_it_was_made_in(service_log) -> None:
    with tracing("made-here"):
        record = log.makeRecord(log.name, logging.ERROR, __file__, 1, "held back", (), None)
    with tracing("written-here"):
        log.handle(record)
    [line] = service_log.lines()
    assert line["trace_id"] == "made-here"


def test_the_formatter_alone_takes_the_chain_it_writes_in() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "plain", (), None)
    with tracing("t-9"):
        line = json.loads(JsonFormatter("clock").format(record))
    assert line["trace_id"] == "t-9"


def test_configuring_twice_keeps_one_record_factory(service_log) -> None:
    factory = logging.getLogRecordFactory()
    configure_logging("rating", "INFO")
    assert logging.getLogRecordFactory() is factory
