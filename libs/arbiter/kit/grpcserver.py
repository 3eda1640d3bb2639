"""The grpc.aio server of a service: error mapping, metrics, health and reflection."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arbiter.kit.auth import AuthInterceptor, ServiceKey
from arbiter.kit.errors import InvalidArgument, ResourceExhausted, ServiceError
from arbiter.kit.metrics import Metrics
from arbiter.kit.ratelimit import RateLimiter

log = logging.getLogger(__name__)

_CLIENT_ERRORS = {
    grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.OUT_OF_RANGE,
}
# Trailing metadata of a RESOURCE_EXHAUSTED refusal: how long the caller should wait before retrying.
RETRY_AFTER_METADATA = "retry-after-ms"


@dataclass(frozen=True)
class GrpcService:
    """One gRPC service to serve: its full name (for health and reflection) and how to add it."""

    full_name: str
    add_to_server: Callable[[grpc.aio.Server], None]
    # Methods people can spam (Create, Join, Leave): each call takes from the acting player's bucket.
    rate_limited: frozenset[str] = frozenset()


class _Call:
    """Maps exceptions to status codes and records the outcome of one call."""

    def __init__(self, metrics: Metrics, method: str) -> None:
        self.metrics = metrics
        self.method = method
        self.started = time.perf_counter()

    async def fail(self, error: Exception, context: grpc.aio.ServicerContext) -> None:
        if isinstance(error, ResourceExhausted) and error.retry_after_ms:
            context.set_trailing_metadata(((RETRY_AFTER_METADATA, str(error.retry_after_ms)),))
        if isinstance(error, ServiceError):
            await context.abort(error.code, error.message)
        if isinstance(error, ValueError):
            # The pure rules raise XxxError(ValueError) with messages written for people.
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        if isinstance(error, NotImplementedError):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{self.method} is not implemented")
        self.metrics.errors.labels(self.metrics.service, "grpc").inc()
        log.exception("unexpected error in %s", self.method)
        await context.abort(grpc.StatusCode.INTERNAL, "internal error; it has been logged")

    def done(self, context: grpc.aio.ServicerContext) -> None:
        code = context.code() or grpc.StatusCode.OK
        if isinstance(code, int):
            code = next((c for c in grpc.StatusCode if c.value[0] == code), grpc.StatusCode.UNKNOWN)
        service = self.metrics.service
        self.metrics.grpc_requests.labels(service, self.method, code.name).inc()
        self.metrics.grpc_latency.labels(service, self.method).observe(time.perf_counter() - self.started)
        if code in _CLIENT_ERRORS:
            self.metrics.refused_calls.labels(service, self.method, code.name).inc()
            log.info("refused %s: %s", self.method, code.name, extra={"details": context.details()})


def nul_field(message: Any, prefix: str = "") -> str | None:
    """The path of the first string field holding a NUL character, or None.

    PostgreSQL text cannot store NUL; refusing it at the door keeps it out of every service.
    """
    for field, value in message.ListFields():
        name = f"{prefix}{field.name}"
        if field.type == field.TYPE_STRING:
            values = value if field.is_repeated else (value,)
            if any("\x00" in item for item in values):
                return name
        elif field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue
            values = value if field.is_repeated else (value,)
            for index, item in enumerate(values):
                inner = nul_field(item, f"{name}[{index}]." if field.is_repeated else f"{name}.")
                if inner:
                    return inner
    return None


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Turns ServiceError/ValueError into status codes with their message, times every call, applies rate limits."""

    def __init__(self, metrics: Metrics, limiter: RateLimiter | None = None,
                 rate_limited: frozenset[str] = frozenset()) -> None:
        self.metrics = metrics
        self.limiter = limiter
        self.rate_limited = rate_limited

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Wrap unary-unary and unary-stream handlers."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method.rsplit("/", 1)[-1]
        metrics = self.metrics
        limiter = self.limiter if method in self.rate_limited else None
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                call = _Call(metrics, method)
                try:
                    _refuse_nul(request)
                    if limiter is not None:
                        await _take_rate_limit(limiter, request, method)
                    return await inner(request, context)
                except grpc.aio.AbortError:
                    raise
                except Exception as error:
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
                call = _Call(metrics, method)
                try:
                    _refuse_nul(request)
                    async for response in inner_stream(request, context):
                        yield response
                except grpc.aio.AbortError:
                    raise
                except Exception as error:
                    await call.fail(error, context)
                finally:
                    call.done(context)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


async def _take_rate_limit(limiter: RateLimiter, request: Any, method: str) -> None:
    # Calls without an acting player are refused by the servicer itself; nothing to count them against.
    actor = getattr(request, "actor", None)
    player_id = getattr(actor, "player_id", "")
    if player_id:
        await limiter.check(player_id, method)


def _refuse_nul(request: Any) -> None:
    field = nul_field(request)
    if field is not None:
        raise InvalidArgument(f"{field} contains a NUL character; text fields cannot hold it")


async def start_grpc_server(
    host: str, port: int, services: Sequence[GrpcService], metrics: Metrics,
    max_message_bytes: int = 1 << 20, auth_keys: dict[str, ServiceKey] | None = None,
    limiter: RateLimiter | None = None,
) -> tuple[grpc.aio.Server, health.aio.HealthServicer, int]:
    """Start a server with `services`, health and reflection; return it, its health servicer and its port.

    With `auth_keys`, every call but health and reflection needs a valid service token; with
    `limiter`, each service's `rate_limited` methods take from the acting player's bucket.
    """
    rate_limited = frozenset().union(*(s.rate_limited for s in services))
    if rate_limited and limiter is None:
        raise ValueError(f"methods {sorted(rate_limited)} are rate limited but no limiter was given")
    interceptors: list[grpc.aio.ServerInterceptor] = [ServiceInterceptor(metrics, limiter, rate_limited)]
    if auth_keys:
        interceptors.insert(0, AuthInterceptor(auth_keys, metrics))
    else:
        log.warning("gRPC authentication is OFF (AUTH_KEYS is empty): for development only")
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
    await server.start()
    for name in ["", *names]:
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, health_servicer, bound
