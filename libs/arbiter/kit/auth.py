"""Service tokens: who is calling our gRPC APIs and in which role, proven by an HMAC signature.

A token is `arb2.<key id>.<role>.<caller>.<expires unix s>.<signature>`, the signature being
HMAC-SHA256 of the part before it with the secret of `<key id>`. A key names the roles it may
sign for (`id:secret:role+role`): the play site's key signs only `play-site` tokens, so holding
it never lets a caller act as a service. Every RPC names the roles it accepts (`RpcRoles`,
declared beside each service's registration); others get PERMISSION_DENIED. Servers accept
every key in AUTH_KEYS, so a rotation is: add the new key to every server, move callers to sign
with it (AUTH_SIGNING_KEY), remove the old key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import grpc

from arbiter.kit.metrics import Metrics
from arbiter.kit.trace import answer_metadata

log = logging.getLogger(__name__)

TOKEN_VERSION = "arb2"
# Tokens of this format carry no role: refused, with a message saying how to mint a new one.
ROLELESS_TOKEN_VERSION = "arb1"
METADATA_KEY = "authorization"
# Probes and tooling must reach these without a token.
OPEN_METHOD_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
_KEY_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_CALLER = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MIN_SECRET_BYTES = 16


class Role(StrEnum):
    """Who a caller is to us: the play site, one of the five services, or an operator."""

    PLAY_SITE = "play-site"
    PAIRING = "pairing"
    CLOCK = "clock"
    ARENA = "arena"
    RATING = "rating"
    OPENINGS = "openings"
    OPERATOR = "operator"


SERVICE_ROLES = frozenset({Role.PAIRING, Role.CLOCK, Role.ARENA, Role.RATING, Role.OPENINGS})
# Reads of public competition data: what the play site shows and an operator looks at.
READERS = frozenset({Role.PLAY_SITE, Role.OPERATOR})
# Acts of a person, relayed by the play site with the acting player (Actor) in the request.
PLAYERS = frozenset({Role.PLAY_SITE})
# Per RPC name (as in the .proto), the roles that may call it.
RpcRoles = Mapping[str, frozenset[Role]]


class AuthConfigError(ValueError):
    """AUTH_KEYS or AUTH_SIGNING_KEY is malformed, or a key is asked for a role it may not sign."""


class TokenError(ValueError):
    """A token is missing, malformed, expired or not signed by a known key."""


@dataclass(frozen=True)
class ServiceKey:
    """One signing key: an id callers name in their tokens, its secret, and the roles it may sign for."""

    key_id: str
    secret: bytes
    roles: frozenset[Role]

    def text(self) -> str:
        """The key as AUTH_KEYS and AUTH_SIGNING_KEY spell it: `id:secret:role+role`."""
        return f"{self.key_id}:{self.secret.decode()}:{'+'.join(sorted(self.roles))}"


@dataclass(frozen=True)
class Caller:
    """Who a verified token says is calling."""

    name: str
    role: Role


def parse_roles(text: str, where: str) -> frozenset[Role]:
    """Roles written `role+role` (or with commas); AuthConfigError naming the unknown ones."""
    names = [name.strip() for name in re.split(r"[+,]", text) if name.strip()]
    unknown = [name for name in names if name not in Role.__members__.values()]
    if unknown or not names:
        known = ", ".join(role.value for role in Role)
        raise AuthConfigError(f"{where}: unknown role(s) {', '.join(unknown) or '(none given)'}; roles are {known}")
    return frozenset(Role(name) for name in names)


def parse_keys(text: str) -> dict[str, ServiceKey]:
    """Read `id:secret:role+role[,...]`; an empty text means authentication is off."""
    keys: dict[str, ServiceKey] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        parts = item.split(":")
        key_id = parts[0]
        if len(parts) == 2 and _KEY_ID.match(key_id):
            raise AuthConfigError(
                f"auth key {key_id} names no roles: write id:secret:role[+role...] "
                f"(roles: {', '.join(role.value for role in Role)})")
        if len(parts) != 3 or not _KEY_ID.match(key_id):
            raise AuthConfigError(
                f"auth key {key_id!r}: expected id:secret:role[+role...] with an id of letters, digits, - or _ "
                "and a secret without ':'")
        secret, roles = parts[1], parse_roles(parts[2], f"auth key {key_id}")
        if len(secret.encode()) < MIN_SECRET_BYTES:
            raise AuthConfigError(f"auth key {key_id}: the secret needs at least {MIN_SECRET_BYTES} bytes")
        if key_id in keys:
            raise AuthConfigError(f"auth key {key_id} is listed twice")
        keys[key_id] = ServiceKey(key_id, secret.encode(), roles)
    return keys


def _signature(secret: bytes, body: str) -> str:
    digest = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def mint_token(key: ServiceKey, role: Role, caller: str, expires_at: float) -> str:
    """A token naming `caller` in `role`, valid until `expires_at` (Unix seconds)."""
    if not _CALLER.match(caller):
        raise AuthConfigError(f"caller name {caller!r}: letters, digits, '-' or '_', at most 64")
    if role not in key.roles:
        raise AuthConfigError(f"key {key.key_id} may sign only for {'+'.join(sorted(key.roles))}, not {role}")
    body = f"{TOKEN_VERSION}.{key.key_id}.{role}.{caller}.{int(expires_at)}"
    return f"{body}.{_signature(key.secret, body)}"


def verify_token(token: str, keys: Mapping[str, ServiceKey], now: float) -> Caller:
    """The caller and role a valid token names; TokenError saying what is wrong otherwise (never echoing secrets)."""
    parts = token.split(".")
    if parts[0] == ROLELESS_TOKEN_VERSION:
        raise TokenError("token of the old arb1 format, which names no role: mint a new one "
                         "(arbiter auth token --role ROLE) with a key that may sign for that role")
    if len(parts) != 6 or parts[0] != TOKEN_VERSION:
        raise TokenError("malformed service token")
    _, key_id, role_name, caller, expires, signature = parts
    key = keys.get(key_id)
    if key is None:
        raise TokenError(f"token signed with unknown or retired key {key_id!r}")
    if not hmac.compare_digest(signature, _signature(key.secret, ".".join(parts[:5]))):
        raise TokenError("bad token signature")
    if not expires.isdigit() or int(expires) < now:
        raise TokenError(f"token of {caller} has expired")
    if role_name not in key.roles:
        # Only a holder of the secret could have signed it: a key used beyond the roles it was given.
        raise TokenError(f"key {key_id} may not sign for role {role_name!r}")
    return Caller(caller, Role(role_name))


def check_roles_cover(service: str, methods: Iterable[str], roles: RpcRoles) -> None:
    """ValueError unless every method of `service` names at least one role and no role names a missing method."""
    methods = set(methods)
    missing = sorted(name for name in methods if not roles.get(name))
    extra = sorted(set(roles) - methods)
    if missing or extra:
        raise ValueError(f"{service}: every RPC must name the roles that may call it; "
                         f"no roles for {missing or 'none'}, roles for unknown RPCs {extra or 'none'}")


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls without a valid token (UNAUTHENTICATED) or from a role the RPC does not accept
    (PERMISSION_DENIED), before any handler runs.

    `roles` maps full method paths (`/package.Service/Method`) to the roles each accepts.
    """

    def __init__(self, keys: Mapping[str, ServiceKey], metrics: Metrics, roles: Mapping[str, frozenset[Role]],
                 now: Callable[[], float] = time.time) -> None:
        self.keys = dict(keys)
        self.metrics = metrics
        self.roles = dict(roles)
        self.now = now

    async def intercept_service(self, continuation: Any, handler_call_details: Any) -> Any:
        """Check the token and its role, or answer with a handler that aborts."""
        method = handler_call_details.method
        if method.startswith(OPEN_METHOD_PREFIXES):
            return await continuation(handler_call_details)
        metadata = dict(handler_call_details.invocation_metadata or ())
        header = metadata.get(METADATA_KEY, "")
        name = method.rsplit("/", 1)[-1]
        try:
            if not header.startswith("Bearer "):
                raise TokenError("no service token: send 'authorization: Bearer <token>'")
            caller = verify_token(header.removeprefix("Bearer "), self.keys, self.now())
        except TokenError as error:
            return await self._refuse(continuation, handler_call_details, grpc.StatusCode.UNAUTHENTICATED, str(error))
        accepted = self.roles.get(method, frozenset())
        if caller.role not in accepted:
            who = ", ".join(sorted(accepted)) or "no role"
            return await self._refuse(
                continuation, handler_call_details, grpc.StatusCode.PERMISSION_DENIED,
                f"{name} is for {who}; this token is {caller.name}'s in role {caller.role}")
        return await continuation(handler_call_details)

    async def _refuse(self, continuation: Any, handler_call_details: Any, code: grpc.StatusCode, message: str) -> Any:
        name = handler_call_details.method.rsplit("/", 1)[-1]
        # Counted as a call too: the failed-call rates are taken from grpc_requests by status code.
        self.metrics.grpc_requests.labels(self.metrics.service, name, code.name).inc()
        self.metrics.refused_calls.labels(self.metrics.service, name, code.name).inc()
        log.info("refused %s: %s", name, code.name, extra={"details": message})
        return _refusal(await continuation(handler_call_details), code, message)


def _refusal(handler: Any, code: grpc.StatusCode, message: str) -> Any:
    async def abort(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message, answer_metadata())

    async def abort_stream(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message, answer_metadata())
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
    """Mints short-lived tokens in one role for this process's outgoing calls, renewing them before they expire."""

    def __init__(self, key: ServiceKey, role: Role, caller: str = "", lifetime_s: float = 600,
                 now: Callable[[], float] = time.time) -> None:
        if role not in key.roles:
            raise AuthConfigError(
                f"signing key {key.key_id} may sign only for {'+'.join(sorted(key.roles))}, not {role}")
        self.key = key
        self.role = role
        self.caller = caller or str(role)
        self.lifetime_s = lifetime_s
        self.now = now
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        """A token valid for at least half its lifetime."""
        current = self.now()
        if current > self._expires - self.lifetime_s / 2:
            self._expires = current + self.lifetime_s
            self._token = mint_token(self.key, self.role, self.caller, self._expires)
        return self._token


def signing_key(text: str) -> ServiceKey | None:
    """The one `id:secret:roles` this process signs with (AUTH_SIGNING_KEY), or None when auth is off."""
    keys = parse_keys(text)
    if len(keys) > 1:
        raise AuthConfigError("AUTH_SIGNING_KEY holds exactly one id:secret:roles")
    return next(iter(keys.values()), None)


def signer_for(text: str, role: Role, caller: str = "") -> TokenSigner | None:
    """A signer for `role` from an AUTH_SIGNING_KEY text, or None when the text is empty (auth off)."""
    key = signing_key(text)
    return TokenSigner(key, role, caller) if key is not None else None
