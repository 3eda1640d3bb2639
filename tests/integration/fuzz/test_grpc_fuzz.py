"""gRPC fuzzing of every method: never an INTERNAL error, never a changed state on a refused call.

Every service of the generated contracts is found from the *_pb2 descriptors and every
one of its methods is called with hypothesis-built requests (proto_strategies): nothing is
listed by hand, so a new RPC is fuzzed as soon as its code is generated.

* `test_refused_calls_change_nothing[<service>]` runs first, on a quiet stack: a few
  almost valid Create*/Join* calls (a day ahead, so nothing starts) make things to name,
  then requests with one deliberate defect; for every refused call the change audit (a
  trigger on every table of every service schema) must stay empty, and per method the
  row counts and checksums of every table must be the same before and after a batch whose
  calls were all refused (persistent Redis keys are compared too, and reported only: they
  are hot copies the services rebuild from PostgreSQL on their own).
* `test_every_method_answers_properly[<service>]`: edge requests (every field at once
  empty, NUL, huge, maximal, minimal; then a plausible request with one field at a time at
  such an extreme), then almost valid requests (ids the services handed out, known
  variants, plausible numbers), then wild ones, then ones with a single defect; every
  answer must be OK or a client error (streams may also be cut by their short deadline).
  A failure is shrunk by hypothesis to a smallest request and reported with the frames of
  the traceback the service logged; UNIMPLEMENTED is a failure, listed apart.

Sizes: FUZZ_EXAMPLES (almost valid and wild examples per unary method, default 30 each, half
as many defective ones; streams a quarter), FUZZ_STATE_EXAMPLES (defective requests per
method in the state check, default 15). FUZZ_NO_NUL=1 leaves NUL characters out, to look
past that failure while it is being fixed. Figures: printed with -s, and written to
<pytest basetemp>/fuzz-summary.json.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

from arbiter_tools.devstack.stack import SystemStack
from tests.integration.fuzz.fuzz_support import (
    CLIENT_ERRORS,
    STREAM_OK,
    UNARY_OK,
    Database,
    FuzzSummary,
    LogReader,
    RedisState,
    call,
    contract_services,
    error_signature,
    log_excerpt,
    methods_in_fuzz_order,
    redis_differences,
    serving_process,
    short,
    snapshot_differences,
)
from tests.integration.fuzz.proto_strategies import (
    IdPool,
    almost_valid,
    any_message,
    edge_messages,
    field_edge_messages,
    fresh_plausible_request,
    hygiene_messages,
    message_class,
    refusable,
)

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "30"))
STATE_EXAMPLES = int(os.environ.get("FUZZ_STATE_EXAMPLES", "15"))
STREAM_EXAMPLES = max(3, EXAMPLES // 4)
SHRINK_CALLS = 100  # calls allowed for shrinking a failure, per method and strategy
UNARY_TIMEOUT = 10.0  # generous: missing it is a failure
STREAM_TIMEOUT = 0.4  # Watch* streams are cut by it

# Services that create things first: the others then get real ids to work on (the arena's
# games are the clock's clocks).
SERVICES: list[ServiceDescriptor] = sorted(
    contract_services(), key=lambda s: not any(m.name.startswith("Create") for m in s.methods))


def _id(service: ServiceDescriptor) -> str:
    return serving_process(service) or service.name


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                    print_blob=False)


def _process_of(service: ServiceDescriptor) -> str:
    process = serving_process(service)
    assert process is not None, f"no services/*/main.py registers {service.full_name}: nothing serves it"
    return process


# ---------------------------------------------------------------------------
# Never a changed state on a refused call
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audited(fuzz_db: Database) -> Database:
    """The audit is installed once the services have migrated and everything is quiet."""
    fuzz_db.install_audit()
    fuzz_db.wait_quiet()
    return fuzz_db


@pytest.mark.parametrize("service", SERVICES, ids=_id)
def test_refused_calls_change_nothing(
    service: ServiceDescriptor, fuzz_stack: SystemStack, audited: Database, fuzz_summary: FuzzSummary,
) -> None:
    process = _process_of(service)
    started = time.monotonic()
    pool = IdPool()  # what the seeding creates: defective requests name real things too
    schemas = audited.schemas()
    redis_state = RedisState(fuzz_stack.redis_url)
    check: dict[str, Any] = {"refused": 0, "accepted": [], "differences": [], "batches_compared": 0,
                             "codes": {}, "seeded": {}}
    fuzz_summary.state_checks[process] = check
    try:
        with grpc.insecure_channel(fuzz_stack.services[process].grpc_address) as channel:
            _seed(channel, service, pool, check, fuzz_summary, process)
            audited.wait_quiet(quiet_seconds=1.0, timeout=20)
            for method in methods_in_fuzz_order(service):
                _state_batch(channel, method, pool, audited, redis_state, schemas, check, fuzz_summary, process)
    finally:
        redis_state.close()
        fuzz_summary.seconds[f"state/{process}"] = round(time.monotonic() - started, 1)
        fuzz_summary.write()
    print(f"\n{process}: {check['refused']} refused calls checked, {len(check['accepted'])} accepted, "
          f"{check['batches_compared']} all-refused batches compared, differences found: {len(check['differences'])}")
    assert not check["differences"], "refused calls changed the state:\n" + "\n".join(
        f"{d['method']}: {d['changes']}\n  request: {d['request']}" for d in check["differences"])


SEED_PLAUSIBLE = 4
SEED_EXAMPLES = 16


def _seed(channel: grpc.Channel, service: ServiceDescriptor, pool: IdPool, check: dict[str, Any],
          summary: FuzzSummary, process: str) -> None:
    """Make some things to refuse calls about: almost valid Create*/Join* calls, all set a day
    ahead so that nothing they make starts while the state is compared."""
    for method in methods_in_fuzz_order(service):
        if method.server_streaming or not method.name.startswith(("Create", "Join")):
            continue
        codes = check["seeded"].setdefault(method.name, {})
        request_class = message_class(method.input_type)
        for index in range(SEED_PLAUSIBLE):  # certain to be accepted, when the service is right
            outcome = call(channel, method, fresh_plausible_request(request_class, pool, index=index,
                                                                    now=time.time() + 86_400), UNARY_TIMEOUT)
            summary.count(process, method.name, "state:seed", outcome.code)
            codes[outcome.code.name] = codes.get(outcome.code.name, 0) + 1
            for response in outcome.responses:
                pool.harvest(response)

        @_settings(SEED_EXAMPLES)
        @given(almost_valid(message_class(method.input_type), pool, now=lambda: time.time() + 86_400))
        def seed(request: Message) -> None:
            outcome = call(channel, method, request, UNARY_TIMEOUT)
            summary.count(process, method.name, "state:seed", outcome.code)
            codes[outcome.code.name] = codes.get(outcome.code.name, 0) + 1
            for response in outcome.responses:
                pool.harvest(response)

        seed()


def _state_batch(
    channel: grpc.Channel, method: MethodDescriptor, pool: IdPool, db: Database, redis_state: RedisState,
    schemas: list[str], check: dict[str, Any], summary: FuzzSummary, process: str,
) -> None:
    request_class = message_class(method.input_type)
    timeout = STREAM_TIMEOUT if method.server_streaming else UNARY_TIMEOUT
    before_tables, before_redis = db.snapshot(schemas), redis_state.snapshot()
    batch_mark = db.audit_mark()
    accepted_here: list[str] = []
    bad: list[dict[str, Any]] = []
    codes = check["codes"].setdefault(method.name, {})

    @_settings(STATE_EXAMPLES)
    @given(refusable(request_class, pool))
    def run(request: Message) -> None:
        mark = db.audit_mark()
        outcome = call(channel, method, request, timeout)
        summary.count(process, method.name, "state:defective", outcome.code)
        codes[outcome.code.name] = codes.get(outcome.code.name, 0) + 1
        refused = outcome.code in CLIENT_ERRORS
        if not refused:
            if outcome.code == grpc.StatusCode.OK and not method.server_streaming:
                accepted_here.append(short(request, 400))
                db.wait_quiet(quiet_seconds=0.5, timeout=5)  # its effects are not the next call's
            elif outcome.code not in STREAM_OK:
                bad.append({"service": process, "method": method.name, "strategy": "state:defective",
                            "code": outcome.code.name, "details": outcome.details, "request": short(request),
                            "seconds": round(outcome.seconds, 2), "server_log": "(see the fuzz test)"})
            return
        check["refused"] += 1
        time.sleep(0.05)  # let anything done after the answer commit
        changes = db.audit_since(mark)
        if changes:
            described = [f"{c['op']} {c['schema_name']}.{c['table_name']} by {c['app']}: {c['row_data'][:300]}"
                         for c in changes]
            check["differences"].append({"method": method.name, "code": outcome.code.name,
                                         "details": outcome.details, "request": short(request),
                                         "changes": described})
            raise AssertionError(f"{method.name} refused ({outcome.code.name}) but changed: {described}")

    # A failure is recorded in check["differences"] (the last one is hypothesis' smallest request).
    with contextlib.suppress(AssertionError, HypothesisException):
        run()

    check["accepted"].extend(f"{method.name}: {r}" for r in accepted_here)
    if bad:  # not this test's assertion (the fuzz test below fails on it), but worth the report
        check.setdefault("bad_codes", []).append(bad[-1])
    if accepted_here:
        return  # a call was accepted: the state may rightly differ; the per-call audit above still held
    time.sleep(0.3)
    late = db.audit_since(batch_mark)
    after_tables, after_redis = db.snapshot(schemas), redis_state.snapshot()
    changes = snapshot_differences(before_tables, after_tables)
    changes += [f"{c['op']} {c['schema_name']}.{c['table_name']} (late)" for c in late]
    # Redis holds hot copies the services rebuild from PostgreSQL by themselves (the arena's
    # `ready` marker, ...): a difference there is reported, not counted as a changed state.
    check.setdefault("redis_notes", []).extend(
        f"{method.name}: {note}" for note in redis_differences(before_redis, after_redis))
    check["batches_compared"] += 1
    if changes:
        check["differences"].append({"method": method.name, "code": "all refused", "details": "",
                                     "request": "(whole batch)", "changes": changes})


# ---------------------------------------------------------------------------
# Input hygiene: the probe's cases refused clearly by every RPC
# ---------------------------------------------------------------------------

# A refusal's message is for people: a short sentence naming the field, never the value whole.
SHORT_DETAILS = 300


@pytest.mark.parametrize("service", SERVICES, ids=_id)
def test_huge_ids_blank_players_and_misleading_names_are_invalid_arguments(
    service: ServiceDescriptor, fuzz_stack: SystemStack, fuzz_summary: FuzzSummary,
) -> None:
    """60,000-character ids, tokens and secrets in every RPC that takes one, `" "` as every player id, names
    with ANSI escapes, newlines, bidi controls or nothing visible: INVALID_ARGUMENT with a short message.

    The probe found 60,000-character ids accepted by four RPCs and echoed whole (the caller got
    RESOURCE_EXHAUSTED, the log a 60 KB line), `" "` a valid player id for pairing and arena but
    not for rating, and such names stored as given.
    """
    process = _process_of(service)
    pool = IdPool()
    wrong: list[str] = []
    checked = 0
    with grpc.insecure_channel(fuzz_stack.services[process].grpc_address) as channel:
        for method in methods_in_fuzz_order(service):
            for case in hygiene_messages(message_class(method.input_type), pool):
                outcome = call(channel, method, case.request, UNARY_TIMEOUT)
                fuzz_summary.count(process, method.name, "hygiene", outcome.code)
                checked += 1
                if (outcome.code != grpc.StatusCode.INVALID_ARGUMENT or len(outcome.details) > SHORT_DETAILS
                        or case.word not in outcome.details or "x" * 100 in outcome.details):
                    wrong.append(f"{method.name} [{case.label}] -> {outcome.code.name}: {outcome.details[:200]!r}"
                                 f" ({len(outcome.details)} characters)")
    print(f"\n{process}: {checked} hygiene cases, {len(wrong)} answered otherwise")
    assert checked, f"{service.full_name}: no RPC takes an id, a player or a name?"
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------
# Never an INTERNAL (or UNKNOWN, or a missed deadline)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def id_pool() -> IdPool:
    """Ids handed out by the services during the fuzzing, shared across services (pairing's
    game ids are what the clock knows)."""
    return IdPool()


@pytest.mark.parametrize("service", SERVICES, ids=_id)
def test_every_method_answers_properly(
    service: ServiceDescriptor, fuzz_stack: SystemStack, fuzz_db: Database, id_pool: IdPool,
    fuzz_summary: FuzzSummary,
) -> None:
    process = _process_of(service)
    started = time.monotonic()
    fuzz_db.harvest_ids(id_pool)  # e.g. the arena's games, which the clock now knows
    logs = LogReader(fuzz_stack.log_dir / f"{process}.log")
    with grpc.insecure_channel(fuzz_stack.services[process].grpc_address) as channel:
        for method in methods_in_fuzz_order(service):
            request_class = message_class(method.input_type)
            examples = STREAM_EXAMPLES if method.server_streaming else EXAMPLES
            plans: list[tuple[str, Callable[[], Any], int]] = [
                ("almost_valid", lambda: almost_valid(request_class, id_pool), examples),
                ("wild", lambda: any_message(request_class), examples),
                ("defective", lambda: refusable(request_class, id_pool), max(3, examples // 2)),
            ]
            edges = [(f"edges:{label}", request) for label, request in edge_messages(request_class)]
            edges += [(f"field:{label}", request) for label, request in field_edge_messages(request_class, id_pool)]
            found = _edge_requests(channel, method, edges, logs, fuzz_summary, process)
            for strategy_name, make, count in plans:
                if any(f["code"] == "UNIMPLEMENTED" for f in found):
                    break  # nothing more to learn from this method
                found += _fuzz_method(channel, method, make(), count, strategy_name, id_pool, logs,
                                      fuzz_summary, process)
            for failure in found:
                if failure["code"] == "UNIMPLEMENTED":
                    if not any(u["method"] == method.name for u in fuzz_summary.unimplemented):
                        fuzz_summary.unimplemented.append(failure)
                else:
                    fuzz_summary.add_failure(failure)
    fuzz_summary.seconds[f"fuzz/{process}"] = round(time.monotonic() - started, 1)
    fuzz_summary.write()
    calls = {m: sum(sum(c.values()) for c in s.values()) for m, s in fuzz_summary.calls[process].items()}
    failures = [f for f in fuzz_summary.unimplemented + fuzz_summary.failures if f["service"] == process]
    print(f"\n{process}: {sum(calls.values())} calls over {len(calls)} methods, failures: {len(failures)}")
    assert not failures, f"{service.full_name} answered badly:\n" + "\n\n".join(
        f"{f['method']} [{f['strategy']}] -> {f['signature']}: {f['details']}\n  request:\n{f['request']}\n"
        f"  server log:\n{f['server_log']}" for f in failures)


def _edge_requests(
    channel: grpc.Channel, method: MethodDescriptor, requests: list[tuple[str, Message]], logs: LogReader,
    summary: FuzzSummary, process: str,
) -> list[dict[str, Any]]:
    """Send fixed edge requests (labelled); one failure per kind, with the first request that hit it."""
    allowed = STREAM_OK if method.server_streaming else UNARY_OK
    timeout = STREAM_TIMEOUT if method.server_streaming else UNARY_TIMEOUT
    found: dict[str, dict[str, Any]] = {}
    for name, request in requests:
        offset = logs.size()
        outcome = call(channel, method, request, timeout)
        summary.count(process, method.name, name.split(":", 1)[0], outcome.code)
        if outcome.code in allowed:
            continue
        entries = _logged_errors(logs, offset, outcome.code)
        signature = f"{outcome.code.name} {error_signature(entries) if entries else ''}".strip()
        found.setdefault(signature, {
            "service": process, "method": method.name, "strategy": name, "code": outcome.code.name,
            "signature": signature, "details": outcome.details, "request": short(request),
            "seconds": round(outcome.seconds, 2), "server_log": log_excerpt(entries) or "(nothing logged)",
        })
    return list(found.values())


def _logged_errors(logs: LogReader, offset: int, code: grpc.StatusCode) -> list[dict[str, Any]]:
    """The errors the service logged for a call that failed with `code` (it may log just after)."""
    entries: list[dict[str, Any]] = []
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
        for _ in range(10):
            entries = logs.errors_since(offset)
            if entries:
                break
            time.sleep(0.02)
    return entries


_BUG_CLASSES: dict[str, type[AssertionError]] = {}


def _bug(signature: str) -> type[AssertionError]:
    """One exception class per kind of failure, so hypothesis shrinks and reports each separately."""
    if signature not in _BUG_CLASSES:
        _BUG_CLASSES[signature] = type(f"BadStatus_{len(_BUG_CLASSES)}", (AssertionError,), {})
    return _BUG_CLASSES[signature]


def _fuzz_method(
    channel: grpc.Channel, method: MethodDescriptor, strategy: st.SearchStrategy[Message], examples: int,
    strategy_name: str, pool: IdPool, logs: LogReader, summary: FuzzSummary, process: str,
) -> list[dict[str, Any]]:
    """Fuzz one method with one strategy; return one failure per kind found (smallest request)."""
    allowed = STREAM_OK if method.server_streaming else UNARY_OK
    timeout = STREAM_TIMEOUT if method.server_streaming else UNARY_TIMEOUT
    found: dict[str, dict[str, Any]] = {}
    # Shrinking a failure can take hundreds of calls: past the budget, only requests already
    # sent are answered (from memory), which lets hypothesis finish with the smallest one seen.
    budget = [examples + SHRINK_CALLS]
    seen: dict[bytes, Any] = {}

    @_settings(examples)
    @given(strategy)
    def run(request: Message) -> None:
        key = request.SerializeToString(deterministic=True)
        if key in seen:
            known = seen[key]
            if known is not None:  # a replay, hypothesis' last one being its smallest failing request
                found[known["signature"]] = known
                raise _bug(known["signature"])(f"{method.name} -> {known['signature']}: {known['details']}")
            return
        if budget[0] <= 0:
            return
        budget[0] -= 1
        seen[key] = None
        offset = logs.size()
        outcome = call(channel, method, request, timeout)
        summary.count(process, method.name, strategy_name, outcome.code)
        for response in outcome.responses:
            pool.harvest(response)
        if outcome.code in allowed:
            return
        entries = _logged_errors(logs, offset, outcome.code)
        signature = f"{outcome.code.name} {error_signature(entries) if entries else ''}".strip()
        # Hypothesis replays the smallest failing request last: it is the one kept.
        found[signature] = seen[key] = {
            "service": process, "method": method.name, "strategy": strategy_name, "code": outcome.code.name,
            "signature": signature, "details": outcome.details, "request": short(request),
            "seconds": round(outcome.seconds, 2), "server_log": log_excerpt(entries) or "(nothing logged)",
        }
        raise _bug(signature)(f"{method.name} -> {signature}: {outcome.details}")

    try:
        run()
    except (AssertionError, HypothesisException, BaseExceptionGroup) as error:
        if not found:
            found["error"] = {"service": process, "method": method.name, "strategy": strategy_name,
                              "code": "ERROR", "signature": "test error", "details": repr(error)[:500],
                              "request": "", "seconds": 0, "server_log": ""}
    return list(found.values())
