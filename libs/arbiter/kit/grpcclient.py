"""Channels to the other services' gRPC APIs (one place to add credentials, trace ids and options)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc

from arbiter.kit.auth import METADATA_KEY, TokenSigner
from arbiter.kit.trace import TRACE_METADATA, current_trace_id

# Round robin over every address the target names (`ipv4:A,B`, or a name resolving to all replicas):
# calls spread over the replicas that answer, and one that goes away is left out until it is back,
# while a call it failed with UNAVAILABLE is retried on another.
_SERVICE_CONFIG = (
    '{"loadBalancingConfig": [{"round_robin": {}}],'
    ' "methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",'
    ' "maxBackoff": "2s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}'
)


class _CallMetadata(grpc.aio.UnaryUnaryClientInterceptor, grpc.aio.UnaryStreamClientInterceptor):
    """Adds to every outgoing call this process's token (when auth is on) and the trace id of the work in hand."""

    def __init__(self, signer: TokenSigner | None) -> None:
        self.signer = signer

    def _details(self, details: Any) -> Any:
        added = []
        if self.signer is not None:
            added.append((METADATA_KEY, f"Bearer {self.signer.token()}"))
        trace = current_trace_id()
        if trace and not any(key == TRACE_METADATA for key, _value in details.metadata or ()):
            added.append((TRACE_METADATA, trace))
        if not added:
            return details
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, grpc.aio.Metadata(*(details.metadata or ()), *added), details.credentials,
            details.wait_for_ready,
        )

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _RideOut(grpc.aio.UnaryUnaryClientInterceptor):
    """Calls a unary method again while it answers UNAVAILABLE, the pauses doubling, for up to `seconds`.

    For a client that must outlast a restart or an outage longer than the channel's own retries
    (the service config's few attempts): the simulator's play site. UNAVAILABLE is what a call gets when the server
    could not be reached or could not reach what it needs, before it changed anything.
    """

    def __init__(self, seconds: float, first_pause: float = 0.2, longest_pause: float = 5.0) -> None:
        self.seconds = seconds
        self.first_pause = first_pause
        self.longest_pause = longest_pause

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        # A call with a deadline of its own rides out no longer than it.
        give_up = time.monotonic() + (self.seconds if details.timeout is None else min(self.seconds, details.timeout))
        pause = self.first_pause
        while True:
            call = await continuation(details, request)
            try:
                return await call
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() + pause > give_up:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, self.longest_pause)


def open_channel(address: str, signer: TokenSigner | None = None, ride_out_seconds: float = 0.0) -> grpc.aio.Channel:
    """An asyncio channel to `address` (one or several replicas) that retries while a replica is (re)starting.

    With a `signer`, every call carries this process's service token (arbiter.kit.auth); every
    call made for a chain carries its trace id in `x-trace-id` (arbiter.kit.trace), unless the
    caller named one in the call's own metadata. With `ride_out_seconds`, a unary call answered
    UNAVAILABLE is tried again with backoff for that long (`_RideOut`), each time with a fresh token.
    """
    if not address:
        raise ValueError("empty gRPC address; set the <SERVICE>_GRPC_ADDR variable")
    interceptors: list[Any] = [_RideOut(ride_out_seconds)] if ride_out_seconds > 0 else []
    return grpc.aio.insecure_channel(
        address,
        options=[("grpc.service_config", _SERVICE_CONFIG), ("grpc.enable_retries", 1)],
        interceptors=[*interceptors, _CallMetadata(signer)],
    )
