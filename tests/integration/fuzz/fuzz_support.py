"""Plumbing of the gRPC fuzz tests: finding the RPCs, calling them, reading the state, counting."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import pkgutil
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import redis
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

import arbiter.contracts
from tests.integration.fuzz.proto_strategies import IdPool, message_class, pool_key

REPO = Path(__file__).resolve().parents[3]

# Refusals a caller may get; anything else (INTERNAL, UNKNOWN, a deadline missed, ...) is a failure.
CLIENT_ERRORS = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.OUT_OF_RANGE,
})
UNARY_OK = CLIENT_ERRORS | {grpc.StatusCode.OK}
# A Watch* stream is cut by our short deadline; that is how it ends normally here.
STREAM_OK = UNARY_OK | {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}


# ---------------------------------------------------------------------------
# Discovery: every service of the generated contracts, and the process serving it
# ---------------------------------------------------------------------------


def contract_services() -> list[ServiceDescriptor]:
    """Every gRPC service declared in arbiter/contracts/*.proto (from the generated *_pb2 modules)."""
    found: list[ServiceDescriptor] = []
    for module in sorted(pkgutil.iter_modules(arbiter.contracts.__path__), key=lambda m: m.name):
        if module.name.endswith("_pb2"):
            pb2 = importlib.import_module(f"arbiter.contracts.{module.name}")
            found.extend(pb2.DESCRIPTOR.services_by_name.values())
    return found


def serving_process(service: ServiceDescriptor) -> str | None:
    """The service process (services/<name>/main.py) that registers `service`, if any."""
    for main in sorted((REPO / "services").glob("*/main.py")):
        if re.search(rf"[\"']{re.escape(service.full_name)}[\"']", main.read_text()):
            return main.parent.name
    return None


def methods_in_fuzz_order(service: ServiceDescriptor) -> list[MethodDescriptor]:
    """Creating calls first (they hand out the ids the others use), streams last."""
    return sorted(service.methods, key=lambda m: (m.server_streaming, not m.name.startswith("Create"), m.name))


# ---------------------------------------------------------------------------
# Calling a method generically
# ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one call returned."""

    code: grpc.StatusCode
    details: str
    responses: list[Message]
    seconds: float


def call(channel: grpc.Channel, method: MethodDescriptor, request: Message, timeout: float) -> Outcome:
    """Call `method` with `request`; a stream is read until it ends or `timeout` cuts it."""
    path = f"/{method.containing_service.full_name}/{method.name}"
    reply = message_class(method.output_type)
    started = time.monotonic()
    responses: list[Message] = []
    try:
        if method.server_streaming:
            stream = channel.unary_stream(path, request_serializer=_serialize, response_deserializer=reply.FromString)
            for response in stream(request, timeout=timeout):
                responses.append(response)
        else:
            unary = channel.unary_unary(path, request_serializer=_serialize, response_deserializer=reply.FromString)
            responses.append(unary(request, timeout=timeout))
    except grpc.RpcError as error:
        return Outcome(error.code(), error.details() or "", responses, time.monotonic() - started)
    return Outcome(grpc.StatusCode.OK, "", responses, time.monotonic() - started)


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def short(message: Message, limit: int = 1500) -> str:
    """A request as protobuf text, long strings cut down so a report stays readable."""
    text = str(message) or "(empty request: every field at its default)"
    text = re.sub(r'(: ")((?:[^"\\]|\\.){120})((?:[^"\\]|\\.)+)"',
                  lambda m: f'{m.group(1)}{m.group(2)}…" ({len(m.group(2)) + len(m.group(3))} characters)', text)
    return text if len(text) <= limit else text[:limit] + " …"


# ---------------------------------------------------------------------------
# Server logs: the traceback behind an INTERNAL
# ---------------------------------------------------------------------------


class LogReader:
    """Unexpected errors a service logged (JSON lines with a traceback) after a given offset."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def errors_since(self, offset: int) -> list[dict[str, Any]]:
        """Logged unexpected errors (level error, or with a traceback) after `offset`."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read().decode(errors="replace")
        found = []
        for line in chunk.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                if "Traceback" in line or "Error" in line:
                    found.append({"raw": line})
                continue
            if entry.get("level") in ("error", "critical") or "exc" in entry:
                found.append(entry)
        return found


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def _our_frames(exc: str) -> list[tuple[str, str, str]]:
    """(file relative to the repository, line, function) of the traceback frames in our code."""
    frames = []
    for text in exc.splitlines():
        match = _FRAME.match(text)
        if match and str(REPO) in match["file"] and "/.venv/" not in match["file"]:
            frames.append((match["file"].replace(str(REPO) + "/", ""), match["line"], match["func"]))
    return frames


def error_signature(entries: list[dict[str, Any]]) -> str:
    """Exception type and deepest frame of our code, e.g. `CharacterNotInRepertoireError@services/x.py:12`."""
    for entry in reversed(entries):
        exc = entry.get("exc", "")
        if exc:
            last = exc.strip().splitlines()[-1]
            kind = last.split(":", 1)[0].rsplit(".", 1)[-1]
            frames = [f for f in _our_frames(exc) if "arbiter/kit/grpcserver" not in f[0]]
            where = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "?"
            return f"{kind}@{where}"
    return "no traceback logged"


def log_excerpt(entries: list[dict[str, Any]], limit: int = 1) -> str:
    """The last logged errors: message, the frames in our code, and the exception."""
    parts = []
    for entry in entries[-limit:]:
        if "raw" in entry:
            parts.append(entry["raw"])
            continue
        exc = entry.get("exc", "")
        lines = [f"[{entry.get('ts')}] {entry.get('logger')}: {entry.get('msg')}"]
        lines += [f"  {file}:{line} in {func}" for file, line, func in _our_frames(exc)]
        if exc:
            lines.append("  " + exc.strip().splitlines()[-1])
        parts.append("\n".join(lines))
    return "\n---\n".join(parts)


# ---------------------------------------------------------------------------
# State: PostgreSQL (checksums and a change audit) and Redis
# ---------------------------------------------------------------------------

REGISTRY_SCHEMA = "registry"
# The relay deletes outbox rows after publishing them, whatever the calls do; an insert
# into it is still seen by the audit below.
UNSTABLE_TABLES = frozenset({"outbox"})

_AUDIT_SETUP = """
CREATE SCHEMA IF NOT EXISTS fuzz_audit;
CREATE TABLE IF NOT EXISTS fuzz_audit.changes (
    id          bigserial PRIMARY KEY,
    schema_name text NOT NULL,
    table_name  text NOT NULL,
    op          text NOT NULL,
    row_data    jsonb,
    app         text,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE FUNCTION fuzz_audit.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO fuzz_audit.changes (schema_name, table_name, op, row_data, app)
    VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP,
            CASE TG_OP WHEN 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END,
            current_setting('application_name', true));
    RETURN NULL;
END $$;
"""


class Database:
    """A synchronous view of the fuzzed stack's database (its own event loop, one connection)."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.connection: asyncpg.Connection = self.loop.run_until_complete(asyncpg.connect(url))
        self.audited: set[tuple[str, str]] = set()

    def close(self) -> None:
        self.loop.run_until_complete(self.connection.close())
        self.loop.close()

    def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return self.loop.run_until_complete(self.connection.fetch(sql, *args))

    def execute(self, sql: str, *args: Any) -> None:
        self.loop.run_until_complete(self.connection.execute(sql, *args))

    def schemas(self) -> list[str]:
        rows = self.fetch(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
            "AND nspname NOT IN ('information_schema', 'public', 'fuzz_audit') ORDER BY 1"
        )
        return [r["nspname"] for r in rows]

    def tables(self, schema: str) -> list[str]:
        rows = self.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1"
            " AND table_type = 'BASE TABLE' ORDER BY 1", schema,
        )
        return [r["table_name"] for r in rows]

    def install_audit(self) -> None:
        """Record every committed row change in every service schema (an insert the relay later
        deletes from the outbox included)."""
        self.execute(_AUDIT_SETUP)
        for schema in self.schemas():
            for table in self.tables(schema):
                if (schema, table) in self.audited:
                    continue
                self.execute(f'DROP TRIGGER IF EXISTS zz_fuzz_audit ON "{schema}"."{table}"')
                self.execute(
                    f'CREATE TRIGGER zz_fuzz_audit AFTER INSERT OR UPDATE OR DELETE ON "{schema}"."{table}"'
                    " FOR EACH ROW EXECUTE FUNCTION fuzz_audit.record()"
                )
                self.audited.add((schema, table))

    def audit_mark(self) -> int:
        return int(self.fetch("SELECT coalesce(max(id), 0) AS m FROM fuzz_audit.changes")[0]["m"])

    def audit_since(self, mark: int) -> list[dict[str, Any]]:
        """Changes since `mark`; the relay deleting published outbox rows is nobody's call."""
        rows = self.fetch(
            "SELECT id, schema_name, table_name, op, row_data::text AS row_data, app FROM fuzz_audit.changes"
            " WHERE id > $1 AND NOT (table_name = 'outbox' AND op = 'DELETE') ORDER BY id", mark,
        )
        return [dict(r) for r in rows]

    def snapshot(self, schemas: Iterable[str]) -> dict[str, tuple[int, str]]:
        """Row count and checksum of every table of `schemas` (outbox aside)."""
        result: dict[str, tuple[int, str]] = {}
        for schema in schemas:
            for table in self.tables(schema):
                if table in UNSTABLE_TABLES:
                    continue
                row = self.fetch(
                    f"SELECT count(*) AS n, md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS h"
                    f' FROM "{schema}"."{table}" t'
                )[0]
                result[f"{schema}.{table}"] = (int(row["n"]), row["h"])
        return result

    def harvest_ids(self, pool: IdPool, per_column: int = 20) -> None:
        """Feed `pool` with the ids stored so far (games the services made among themselves, say),
        so that almost valid requests name things that exist."""
        rows = self.fetch(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = ANY($1::text[]) AND data_type = 'text'"
            " AND (column_name = 'id' OR column_name LIKE '%\\_id')", self.schemas(),
        )
        for row in rows:
            schema, table, column = row["table_schema"], row["table_name"], row["column_name"]
            if table in ("outbox", "processed_events", "timers") or column == "event_id":
                continue
            key = f"{table.rstrip('s')}_id" if column == "id" else column
            values = self.fetch(
                f'SELECT DISTINCT "{column}" AS v FROM "{schema}"."{table}" WHERE "{column}" IS NOT NULL'
                f" LIMIT {int(per_column)}"
            )
            for value in values:
                pool.add(pool_key(key), value["v"])

    def outbox_rows(self) -> int:
        total = 0
        for schema in self.schemas():
            if "outbox" in self.tables(schema):
                total += int(self.fetch(f'SELECT count(*) AS n FROM "{schema}".outbox')[0]["n"])
        return total

    def wait_quiet(self, quiet_seconds: float = 2.0, timeout: float = 30.0) -> bool:
        """Wait until nothing is written for `quiet_seconds` and the outboxes are empty."""
        deadline = time.monotonic() + timeout
        last, since = self.audit_mark(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now = self.audit_mark()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_seconds and self.outbox_rows() == 0:
                return True
        return False


def snapshot_differences(before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]) -> list[str]:
    """Tables whose rows differ, with their counts."""
    out = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            b, a = before.get(name, (0, "-")), after.get(name, (0, "-"))
            out.append(f"{name}: {b[0]} rows (md5 {b[1][:8]}) -> {a[0]} rows (md5 {a[1][:8]})")
    return out


class RedisState:
    """Persistent keys of the stack's Redis database (keys with a TTL are leases and caches)."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    def snapshot(self) -> dict[str, str]:
        state: dict[str, str] = {}
        for key in self.client.scan_iter(count=500):
            if self.client.pttl(key) != -1:
                continue
            dumped = self.client.dump(key)
            if dumped is not None:
                state[key.decode(errors="replace")] = hashlib.sha1(dumped).hexdigest()[:12]
        return state

    def close(self) -> None:
        self.client.close()


def redis_differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            what = "added" if key not in before else "removed" if key not in after else "changed"
            out.append(f"redis key {key} {what}")
    return out


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------


@dataclass
class FuzzSummary:
    """Calls fuzzed, codes seen, differences and failures found; `write()` makes fuzz-summary.json."""

    path: Path
    calls: dict[str, dict[str, dict[str, Counter[str]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(Counter)))
    )
    state_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    unimplemented: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def add_failure(self, failure: dict[str, Any]) -> None:
        """Keep one failure per method and kind (the smallest request of the strategies that hit it)."""
        for i, known in enumerate(self.failures):
            if (known["service"], known["method"], known["signature"]) == (
                    failure["service"], failure["method"], failure["signature"]):
                if len(failure["request"]) < len(known["request"]):
                    self.failures[i] = {**failure, "strategy": f"{failure['strategy']}, {known['strategy']}"}
                else:
                    known["strategy"] = f"{known['strategy']}, {failure['strategy']}"
                return
        self.failures.append(failure)

    def count(self, service: str, method: str, strategy: str, code: grpc.StatusCode) -> None:
        self.calls[service][method][strategy][code.name] += 1

    def total_calls(self) -> int:
        return sum(sum(c.values()) for methods in self.calls.values() for strategies in methods.values()
                   for c in strategies.values())

    def as_dict(self) -> dict[str, Any]:
        per_method = {
            f"{service}/{method}": {
                "calls": sum(sum(c.values()) for c in strategies.values()),
                "codes": dict(sum((c for c in strategies.values()), Counter())),
                "by_strategy": {name: dict(c) for name, c in strategies.items()},
            }
            for service, methods in sorted(self.calls.items()) for method, strategies in sorted(methods.items())
        }
        differences = sum(len(s.get("differences", [])) for s in self.state_checks.values())
        return {
            "calls_fuzzed": self.total_calls(),
            "methods_fuzzed": len(per_method),
            "failures_found": len(self.failures),
            "unimplemented_methods": len(self.unimplemented),
            "refused_calls_state_checked": sum(s.get("refused", 0) for s in self.state_checks.values()),
            "state_differences_found": differences,
            "per_method": per_method,
            "state_checks": self.state_checks,
            "failures": self.failures,
            "unimplemented": self.unimplemented,
            "seconds": self.seconds,
        }

    def write(self) -> None:
        self.path.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=True, default=str))

    def render(self) -> str:
        data = self.as_dict()
        lines = ["gRPC fuzz summary", f"{'method':<48} {'calls':>6}  codes"]
        for name, row in data["per_method"].items():
            codes = ", ".join(f"{k}={v}" for k, v in sorted(row["codes"].items(), key=lambda kv: -kv[1]))
            lines.append(f"{name:<48} {row['calls']:>6}  {codes}")
        lines.append(
            f"calls fuzzed: {data['calls_fuzzed']} over {data['methods_fuzzed']} methods; "
            f"failures (INTERNAL/UNKNOWN/deadline/...): {data['failures_found']}; "
            f"UNIMPLEMENTED methods: {data['unimplemented_methods']}"
        )
        lines.append(
            f"refused calls checked for state changes: {data['refused_calls_state_checked']}; "
            f"differences found: {data['state_differences_found']}"
        )
        for failure in self.failures:
            lines.append(f"  FAILURE {failure['service']}/{failure['method']} [{failure['strategy']}]: "
                         f"{failure['signature']} ({failure['details'][:120]})")
            lines.append("    smallest request: " + " ".join(failure["request"].split())[:300])
        for item in self.unimplemented:
            lines.append(f"  UNIMPLEMENTED {item['service']}/{item['method']}")
        for service, check in self.state_checks.items():
            for bad in check.get("bad_codes", []):
                lines.append(f"  (state check) {service}/{bad['method']} answered {bad['code']} to: "
                             + " ".join(bad["request"].split())[:200])
            for note in check.get("redis_notes", []):
                lines.append(f"  (note) {service}/{note}")
            for difference in check.get("differences", []):
                lines.append(f"  STATE CHANGED by a refused call to {service}/{difference['method']}: "
                             f"{'; '.join(difference['changes'])[:300]}")
        return "\n".join(lines)
