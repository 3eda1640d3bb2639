"""Structured logs: one JSON object per line on stderr, each with the trace id(s) of the work it was written for."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from arbiter.kit.trace import TraceScope, current_scope

_STANDARD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}
# Where a record keeps the trace scope it was made in (arbiter.kit.trace); "_" keeps it out of the extras.
_SCOPE_ATTRIBUTE = "_arbiter_trace_scope"


class JsonFormatter(logging.Formatter):
    """Formats a record as JSON, keeping the `extra=` fields as top-level keys, with its trace id(s)."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        """Render one record."""
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        _add_traces(entry, record)
        entry.update(_extras(record))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def _extras(record: logging.LogRecord) -> dict[str, object]:
    """The fields a log call added with `extra=`."""
    return {key: value for key, value in vars(record).items()
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_")}


def _add_traces(entry: dict[str, object], record: logging.LogRecord) -> None:
    """`trace_id` (or `trace_ids` for a batch of several chains): a line's own `extra=` one first, then its scope's."""
    if "trace_id" in record.__dict__:
        return
    scope: TraceScope | None = record.__dict__.get(_SCOPE_ATTRIBUTE, None)
    if scope is None and _SCOPE_ATTRIBUTE not in record.__dict__:
        # A record made before configure_logging: the scope it is written in is the best known.
        scope = current_scope()
    if scope is not None:
        ids = scope.ids
        if len(ids) == 1:
            entry["trace_id"] = ids[0]
        elif ids:
            entry["trace_ids"] = list(ids)


def _scope_keeping(factory: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    """A record factory that keeps, on each record, the trace scope it is made in.

    Taken when the record is made, not when it is written: a handler may write a record later,
    from other work (one holding back repeats writes the last of them at the next record).
    """
    def make(*args: object, **kwargs: object) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        setattr(record, _SCOPE_ATTRIBUTE, current_scope())
        return record

    make.keeps_trace_scope = True  # type: ignore[attr-defined]  # a mark on the function object
    return make


# A warning or error repeated within this many seconds is written once (LOG_REPEAT_SECONDS).
DEFAULT_REPEAT_SECONDS = 10.0


@dataclass
class _Repeats:
    """One kind of line: when it was last written, and how many of it were held back since."""

    written_at: float
    suppressed: int = 0


class RepeatFilter(logging.Filter):
    """Writes a warning or error of one kind at most once per `window` seconds, counting the ones it holds back.

    A client whose server is gone (aiokafka with the broker down) logs the same failure for every
    node, fetch and heartbeat, many times a second, for as long as the outage lasts: the
    lines that matter drown. A kind is the logger, the level, the message before its arguments are
    filled in and the line's own `extra=` fields: a client library's failures are one kind per
    message whatever node they name, ours one per error they carry, while lines about different
    events (a record set aside, with its offset) are different facts and all pass. The first line
    of a kind passes; the next one after the window passes carrying `suppressed`, how many of its
    kind were dropped meanwhile. Lines below WARNING always pass. Kinds not seen for a window are
    forgotten once there are more than `max_kinds`.
    """

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic, max_kinds: int = 1000) -> None:
        super().__init__()
        self.window = window
        self.clock = clock
        self.max_kinds = max_kinds
        self._kinds: dict[tuple[str, int, str, str], _Repeats] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is written; a written repeat carries the count held back before it."""
        if record.levelno < logging.WARNING or self.window <= 0:
            return True
        extras = sorted((key, repr(value)) for key, value in _extras(record).items())
        kind = (record.name, record.levelno, str(record.msg), repr(extras))
        now = self.clock()
        seen = self._kinds.get(kind)
        if seen is None:
            if len(self._kinds) >= self.max_kinds:
                self._forget_before(now - self.window)
            self._kinds[kind] = _Repeats(now)
            return True
        if now - seen.written_at < self.window:
            seen.suppressed += 1
            return False
        if seen.suppressed:
            record.suppressed = seen.suppressed
        seen.written_at, seen.suppressed = now, 0
        return True

    def _forget_before(self, moment: float) -> None:
        self._kinds = {kind: seen for kind, seen in self._kinds.items() if seen.written_at >= moment}


def configure_logging(service: str, level: str = "INFO", repeat_seconds: float = DEFAULT_REPEAT_SECONDS) -> None:
    """Send every log record of the process to stderr as JSON lines, each with its trace id(s).

    A warning or error repeated within `repeat_seconds` is held back and counted (RepeatFilter).
    """
    if not getattr(logging.getLogRecordFactory(), "keeps_trace_scope", False):
        logging.setLogRecordFactory(_scope_keeping(logging.getLogRecordFactory()))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    handler.addFilter(RepeatFilter(repeat_seconds))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiokafka", "faststream", "kafka"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
