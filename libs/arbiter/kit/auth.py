"""Service tokens: who is calling our gRPC APIs, proven by an HMAC signature; keys rotate without downtime.

A token is `arb1.<key id>.<caller>.<expires unix s>.<signature>`, the signature being
HMAC-SHA256 of the part before it with the secret of `<key id>`. Servers accept every
key in AUTH_KEYS (`id:secret,id:secret`), so a rotation is: add the new key to every
server, move callers to sign with it (AUTH_SIGNING_KEY), remove the old key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from arbiter.kit.metrics import Metrics

log = logging.getLogger(__name__)

TOKEN_VERSION = "arb1"
METADATA_KEY = "authorization"
# Probes and tooling must reach these without a token.
OPEN_METHOD_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
_KEY_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_CALLER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MIN_SECRET_BYTES = 16


class AuthConfigError(ValueError):
    """AUTH_KEYS or AUTH_SIGNING_KEY is malformed."""


class TokenError(ValueError):
    """A token is missing, malformed, expired or not signed by a known key."""


@dataclass(frozen=True)
class ServiceKey:
    """One signing key: an id callers name in their tokens, and its secret."""

    key_id: str
    secret: bytes


def parse_keys(text: str) -> dict[str, ServiceKey]:
    """Read `id:secret[,id:secret...]`; an empty text means authentication is off."""
    keys: dict[str, ServiceKey] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key_id, sep, secret = item.partition(":")
        if not sep or not _KEY_ID.match(key_id):
            raise AuthConfigError(f"auth key {key_id!r}: expected id:secret with an id of letters, digits, - or _")
        if len(secret.encode()) < MIN_SECRET_BYTES:
            raise AuthConfigError(f"auth key {key_id}: the secret needs at least {MIN_SECRET_BYTES} bytes")
        if key_id in keys:
            raise AuthConfigError(f"auth key {key_id} is listed twice")
        keys[key_id] = ServiceKey(key_id, secret.encode())
    return keys


def _signature(secret: bytes, body: str) -> str:
    digest = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def mint_token(key: ServiceKey, caller: str, expires_at: float) -> str:
    """A token naming `caller`, valid until `expires_at` (Unix seconds)."""
    if not _CALLER.match(caller):
        raise AuthConfigError(f"caller name {caller!r}: letters, digits, '.', '-' or '_', at most 64")
    body = f"{TOKEN_VERSION}.{key.key_id}.{caller}.{int(expires_at)}"
    return f"{body}.{_signature(key.secret, body)}"


def verify_token(token: str, keys: Mapping[str, ServiceKey], now: float) -> str:
    """The caller a valid token names; TokenError saying what is wrong otherwise (never echoing secrets)."""
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != TOKEN_VERSION:
        raise TokenError("malformed service token")
    _, key_id, caller, expires, signature = parts
    key = keys.get(key_id)
    if key is None:
        raise TokenError(f"token signed with unknown or retired key {key_id!r}")
    if not hmac.compare_digest(signature, _signature(key.secret, ".".join(parts[:4]))):
        raise TokenError("bad token signature")
    if not expires.isdigit() or int(expires) < now:
        raise TokenError(f"token of {caller} has expired")
    return caller


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls without a valid service token with UNAUTHENTICATED, before any handler runs."""

    def __init__(self, keys: Mapping[str, ServiceKey], metrics: Metrics, now: Callable[[], float] = time.time) -> None:
        self.keys = dict(keys)
        self.metrics = metrics
        self.now = now

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Check the token, or answer with a handler that aborts."""
        method = handler_call_details.method
        if method.startswith(OPEN_METHOD_PREFIXES):
            return await continuation(handler_call_details)
        metadata = dict(handler_call_details.invocation_metadata or ())
        header = metadata.get(METADATA_KEY, "")
        try:
            if not header.startswith("Bearer "):
                raise TokenError("no service token: send 'authorization: Bearer <token>'")
            verify_token(header.removeprefix("Bearer "), self.keys, self.now())
        except TokenError as error:
            name = method.rsplit("/", 1)[-1]
            # Counted as a call too: the failed-call rates are taken from grpc_requests by status code.
            self.metrics.grpc_requests.labels(self.metrics.service, name, "UNAUTHENTICATED").inc()
            self.metrics.refused_calls.labels(self.metrics.service, name, "UNAUTHENTICATED").inc()
            log.info("refused %s: UNAUTHENTICATED", name, extra={"details": str(error)})
            return _refusal(await continuation(handler_call_details), str(error))
        return await continuation(handler_call_details)


def _refusal(handler: Any, message: str) -> Any:
    async def abort(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    async def abort_stream(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
        yield  # pragma: no cover - makes this an async generator like the real handler

    if handler is not None and handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            abort_stream, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
    return grpc.unary_unary_rpc_method_handler(
        abort,
        request_deserializer=handler.request_deserializer if handler is not None else None,
        response_serializer=handler.response_serializer if handler is not None else None,
    )


class TokenSigner:
    """Mints short-lived tokens for this process's outgoing calls, renewing them before they expire."""

    def __init__(self, key: ServiceKey, caller: str, lifetime_s: float = 600, now: Callable[[], float] = time.time):
        self.key = key
        self.caller = caller
        self.lifetime_s = lifetime_s
        self.now = now
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        """A token valid for at least half its lifetime."""
        current = self.now()
        if current > self._expires - self.lifetime_s / 2:
            self._expires = current + self.lifetime_s
            self._token = mint_token(self.key, self.caller, self._expires)
        return self._token


def signing_key(text: str) -> ServiceKey | None:
    """The one `id:secret` this process signs with (AUTH_SIGNING_KEY), or None when auth is off."""
    keys = parse_keys(text)
    if len(keys) > 1:
        raise AuthConfigError("AUTH_SIGNING_KEY holds exactly one id:secret")
    return next(iter(keys.values()), None)


class _TokenClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, signer: TokenSigner) -> None:
        self.signer = signer

    def _with_token(self, details: Any) -> Any:
        metadata = list(details.metadata or ())
        metadata.append((METADATA_KEY, f"Bearer {self.signer.token()}"))
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._with_token(details), request)

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._with_token(details), request)


def token_interceptors(signer: TokenSigner | None) -> list[Any]:
    """Client interceptors that attach this process's token (none when auth is off)."""
    return [] if signer is None else [_TokenClientInterceptor(signer)]
