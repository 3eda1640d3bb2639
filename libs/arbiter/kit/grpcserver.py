"""The grpc.aio server of a service: error mapping, metrics, health and reflection."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arbiter.kit.auth import OPEN_METHOD_PREFIXES, AuthInterceptor, Role, RpcRoles, ServiceKey, check_roles_cover
from arbiter.kit.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, ServiceError
from arbiter.kit.fields import PLAYER_ID, id_problem, nul_field
from arbiter.kit.health import LIVENESS, READINESS
from arbiter.kit.metrics import Metrics, combinations, precreate
from arbiter.kit.poison import is_transient
from arbiter.kit.ratelimit import RateLimiter
from arbiter.kit.trace import TRACE_METADATA, answer_metadata, trace_this_task, usable_or_new
from arbiter.kit.watch import Foreground

log = logging.getLogger(__name__)

# Refusals by design: the caller asked for something the rules or its rights do not allow.
REFUSAL_CODES = frozenset({
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.OUT_OF_RANGE,
})
# Failures on our side: a bug (INTERNAL, UNKNOWN, UNIMPLEMENTED), lost data, or a dependency that did
# not answer in time (UNAVAILABLE, DEADLINE_EXCEEDED raised by our handlers). A caller that cancels
# or whose deadline passes is CANCELLED, neither refused nor failed.
SERVER_ERROR_CODES = frozenset({
    grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS, grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.ABORTED,
})
CALL_CODES = (grpc.StatusCode.OK, grpc.StatusCode.CANCELLED, *sorted(REFUSAL_CODES | SERVER_ERROR_CODES,
                                                                      key=lambda code: code.name))
# Trailing metadata of a RESOURCE_EXHAUSTED refusal: how long the caller should wait before retrying.
RETRY_AFTER_METADATA = "retry-after-ms"
# A refusal's message travels in a trailer (percent-encoded, up to three bytes per byte) that clients
# take up to 8 KiB of: a longer one reached the caller as RESOURCE_EXHAUSTED instead of its code.
MAX_DETAILS_BYTES = 1500


def clipped(message: str) -> str:
    """`message` as a refusal may carry it: cut, with its length, when its UTF-8 exceeds MAX_DETAILS_BYTES."""
    if len(message.encode()) <= MAX_DETAILS_BYTES:
        return message
    cut = message.encode()[:MAX_DETAILS_BYTES - 60].decode(errors="ignore")
    return f"{cut}… (message cut, {len(message):,} characters)"


@dataclass(frozen=True)
class GrpcService:
    """One gRPC service to serve: its full name (for health and reflection), how to add it, and who may call what."""

    full_name: str
    add_to_server: Callable[[grpc.aio.Server], None]
    # Per RPC, the caller roles it accepts (arbiter.kit.auth); every RPC of the service must be named.
    roles: RpcRoles
    # Methods people can spam (Create, Join, Leave): each call takes from the acting player's bucket.
    rate_limited: frozenset[str] = frozenset()


class _Call:
    """Maps exceptions to status codes and records the outcome of one call (unary or a server stream)."""

    def __init__(self, metrics: Metrics, method: str, stream: bool = False) -> None:
        self.metrics = metrics
        self.method = method
        self.stream = stream
        self.cancelled = False
        self.started = time.perf_counter()

    async def fail(self, error: Exception, context: grpc.aio.ServicerContext) -> None:
        if isinstance(error, ResourceExhausted) and error.retry_after_ms:
            context.set_trailing_metadata(((RETRY_AFTER_METADATA, str(error.retry_after_ms)), *answer_metadata()))
        if isinstance(error, ServiceError):
            await context.abort(error.code, clipped(error.message))
        if isinstance(error, ValueError):
            # The pure rules raise XxxError(ValueError) with messages written for people.
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, clipped(str(error)))
        if isinstance(error, NotImplementedError):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{self.method} is not implemented")
        if is_transient(error):
            # PostgreSQL, Redis or a service out of reach for now (restarting, lost): the caller may
            # try again, which INTERNAL would tell it not to; a stack trace per call says nothing more.
            log.warning("%s: a store or service it needs is out of reach: %s: %s", self.method,
                        type(error).__name__, clipped(str(error)))
            await context.abort(grpc.StatusCode.UNAVAILABLE, "a store or service this call needs is out of reach "
                                "for now; try again shortly")
        self.metrics.errors.labels(self.metrics.service, "grpc").inc()
        log.exception("unexpected error in %s", self.method)
        await context.abort(grpc.StatusCode.INTERNAL, "internal error; it has been logged")

    def done(self, context: grpc.aio.ServicerContext) -> None:
        code = grpc.StatusCode.CANCELLED if self.cancelled else context.code() or grpc.StatusCode.OK
        if isinstance(code, int):
            code = next((c for c in grpc.StatusCode if c.value[0] == code), grpc.StatusCode.UNKNOWN)
        service = self.metrics.service
        self.metrics.grpc_requests.labels(service, self.method, code.name).inc()
        # A stream is open for as long as its client watches: one slow "call" in the unary histogram.
        took = time.perf_counter() - self.started
        if self.stream:
            self.metrics.grpc_stream_seconds.labels(service, self.method).observe(took)
        else:
            self.metrics.grpc_latency.labels(service, self.method).observe(took)
        if code in REFUSAL_CODES:
            self.metrics.refused_calls.labels(service, self.method, code.name).inc()
            log.info("refused %s: %s", self.method, code.name, extra={"details": context.details()})
        elif code in SERVER_ERROR_CODES:
            self.metrics.grpc_server_errors.labels(service, self.method, code.name).inc()


def _metadata_value(metadata: Any, key: str) -> str:
    """The first value of `key` in a call's invocation metadata ("" when absent or binary)."""
    for item_key, value in metadata or ():
        if item_key == key:
            return value if isinstance(value, str) else ""
    return ""


class TraceInterceptor(grpc.aio.ServerInterceptor):
    """Runs every call (health and reflection aside) in its trace: the caller's `x-trace-id`, else a fresh one.

    Set on the call's own task before the other interceptors run, so the refusals they log
    carry it too; every answer tells the caller the trace id in its trailing metadata
    (`ServiceInterceptor`, `AuthInterceptor`). A value that is not a trace id is not used: the
    call gets a fresh id, and a warning says why (arbiter.kit.fields.trace_id_problem).
    """

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Set the call's trace, then let the call go on."""
        if not handler_call_details.method.startswith(OPEN_METHOD_PREFIXES):
            given = _metadata_value(handler_call_details.invocation_metadata, TRACE_METADATA)
            trace, problem = usable_or_new(given)
            trace_this_task(trace)
            if problem is not None:
                log.warning("%s not used: it %s; the call runs in a trace of its own", TRACE_METADATA, problem,
                            extra={"method": handler_call_details.method})
        return await continuation(handler_call_details)


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Turns ServiceError/ValueError into status codes with their message, times every call, applies rate limits."""

    def __init__(self, metrics: Metrics, limiter: RateLimiter | None = None,
                 rate_limited: frozenset[str] = frozenset(), foreground: Foreground | None = None,
                 streams_only: bool = False) -> None:
        self.metrics = metrics
        self.limiter = limiter
        self.rate_limited = rate_limited
        # Unary calls are counted in: Watch streams (unary-stream) give way to them.
        self.foreground = foreground or Foreground()
        # A watch server (WATCH_ONLY) answers its streams and refuses every unary call.
        self.streams_only = streams_only

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Wrap unary-unary and unary-stream handlers; health checks and reflection pass untouched (not traffic)."""
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(OPEN_METHOD_PREFIXES):
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        metrics = self.metrics
        limiter = self.limiter if method in self.rate_limited else None
        foreground = self.foreground
        if handler.unary_unary is not None:
            inner = handler.unary_unary
            streams_only = self.streams_only

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                call = _Call(metrics, method)
                context.set_trailing_metadata(answer_metadata())
                charged = ""
                try:
                    if streams_only:
                        raise FailedPrecondition(
                            f"{method}: this address is a watch server, which serves the Watch streams only; "
                            f"call the service's own address")
                    _refuse_nul(request)
                    with foreground.at_work():
                        if limiter is not None:
                            charged = await _take_rate_limit(limiter, request, method)
                        return await inner(request, context)
                except grpc.aio.AbortError:
                    raise
                except asyncio.CancelledError:
                    call.cancelled = True
                    raise
                except Exception as error:
                    if charged and limiter is not None and _malformed(error):
                        await limiter.give_back(charged, method)
                    await call.fail(error, context)
                finally:
                    call.done(context)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                call = _Call(metrics, method, stream=True)
                context.set_trailing_metadata(answer_metadata())
                streams_open = metrics.grpc_streams_open.labels(metrics.service, method)
                streams_open.inc()
                try:
                    _refuse_nul(request)
                    async for response in inner_stream(request, context):
                        yield response
                except grpc.aio.AbortError:
                    raise
                except (asyncio.CancelledError, GeneratorExit):
                    # The client went away (or its deadline passed) while we were streaming.
                    call.cancelled = True
                    raise
                except Exception as error:
                    await call.fail(error, context)
                finally:
                    streams_open.dec()
                    call.done(context)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def expect_calls(metrics: Metrics, services: Sequence[GrpcService]) -> None:
    """Create the call series of every method of `services` at zero, each unary method's latency and each stream's."""
    service = metrics.service
    refusals = sorted(code.name for code in REFUSAL_CODES)
    server_errors = sorted(code.name for code in SERVER_ERROR_CODES)
    for full_name in (s.full_name for s in services):
        for method in descriptor_pool.Default().FindServiceByName(full_name).methods:
            precreate(metrics.grpc_requests, service, combinations([method.name], [c.name for c in CALL_CODES]))
            precreate(metrics.refused_calls, service, combinations([method.name], refusals))
            precreate(metrics.grpc_server_errors, service, combinations([method.name], server_errors))
            if method.server_streaming:
                precreate(metrics.grpc_stream_seconds, service, [(method.name,)])
                metrics.grpc_streams_open.labels(service, method.name).set(0)
            else:
                precreate(metrics.grpc_latency, service, [(method.name,)])


async def _take_rate_limit(limiter: RateLimiter, request: Any, method: str) -> str:
    """Charge the acting player one call of `method`; the player charged ("" when nobody was)."""
    # Calls without a valid acting player are refused by the servicer itself; nothing to count them against.
    actor = getattr(request, "actor", None)
    player_id = getattr(actor, "player_id", "")
    if player_id and id_problem(player_id, PLAYER_ID) is None:
        await limiter.check(player_id, method)
        return str(player_id)
    return ""


def _malformed(error: Exception) -> bool:
    """A request refused for its own form: it changed nothing, so it costs the caller nothing either."""
    return isinstance(error, (InvalidArgument, ValueError))


def _refuse_nul(request: Any) -> None:
    field = nul_field(request)
    if field is not None:
        raise InvalidArgument(f"{field} contains a NUL character; text fields cannot hold it")


def rpc_names(full_name: str) -> list[str]:
    """The RPCs of a service, by its full protobuf name (its _pb2 module must have been imported)."""
    return [method.name for method in descriptor_pool.Default().FindServiceByName(full_name).methods]


def method_paths_roles(services: Sequence[GrpcService]) -> dict[str, frozenset[Role]]:
    """`/package.Service/Method` -> accepted roles, after checking that every RPC of every service names its roles."""
    paths: dict[str, frozenset[Role]] = {}
    for service in services:
        check_roles_cover(service.full_name, rpc_names(service.full_name), service.roles)
        paths.update({f"/{service.full_name}/{name}": roles for name, roles in service.roles.items()})
    return paths


async def start_grpc_server(
    host: str, port: int, services: Sequence[GrpcService], metrics: Metrics,
    max_message_bytes: int = 1 << 20, auth_keys: dict[str, ServiceKey] | None = None,
    limiter: RateLimiter | None = None, foreground: Foreground | None = None, streams_only: bool = False,
) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """Start a server with `services`, health and reflection; return it, its health servicer and its port.

    Every call but health and reflection runs in its trace (`TraceInterceptor`, arbiter.kit.trace).
    With `auth_keys`, every call but health and reflection needs a valid service token in a role
    its RPC accepts (each service's `roles`); with `limiter`, each service's `rate_limited`
    methods take from the acting player's bucket; unary calls are counted in `foreground`, which
    Watch streams give way to; with `streams_only` (a watch server) every unary call is refused
    with FAILED_PRECONDITION.
    Health says SERVING for liveness ("") at once, and NOT_SERVING for readiness and each
    service until a readiness check (arbiter.kit.health.Readiness) finds every dependency answering.
    """
    rate_limited = frozenset().union(*(s.rate_limited for s in services))
    if rate_limited and limiter is None:
        raise ValueError(f"methods {sorted(rate_limited)} are rate limited but no limiter was given")
    method_roles = method_paths_roles(services)
    interceptors: list[grpc.aio.ServerInterceptor] = [
        ServiceInterceptor(metrics, limiter, rate_limited, foreground, streams_only)]
    if auth_keys:
        interceptors.insert(0, AuthInterceptor(auth_keys, metrics, method_roles))
    else:
        log.warning("gRPC authentication is OFF (AUTH_KEYS is empty): for development only")
    interceptors.insert(0, TraceInterceptor())
    server = grpc.aio.server(
        interceptors=interceptors,
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            # Answers (standings, pairings, leaderboard pages) are bounded by page sizes, not by this.
            ("grpc.max_send_message_length", 16 << 20),
            # gRPC's default SO_REUSEPORT let a second server bind a port already served, and the
            # kernel then split the connections between them: a pairing service once reached
            # another test stack's server at its rating address (UNIMPLEMENTED). One port, one server.
            ("grpc.so_reuseport", 0),
        ],
    )
    for service in services:
        service.add_to_server(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [s.full_name for s in services]
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as error:  # how grpcio reports a failed bind
        raise OSError(f"cannot bind gRPC on {host}:{port}: {error}") from error
    expect_calls(metrics, services)
    await server.start()
    await health_servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
    for name in (READINESS, *names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    return server, health_servicer, bound
