"""Channels to the other services' gRPC APIs (one place to add credentials and options)."""

from __future__ import annotations

import grpc

from arbiter.kit.auth import TokenSigner, token_interceptors

_RETRY_POLICY = (
    '{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",'
    ' "maxBackoff": "2s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}'
)


def open_channel(address: str, signer: TokenSigner | None = None) -> grpc.aio.Channel:
    """An asyncio channel to `address` that retries while the other service is (re)starting.

    With a `signer`, every call carries this process's service token (arbiter.kit.auth).
    """
    if not address:
        raise ValueError("empty gRPC address; set the <SERVICE>_GRPC_ADDR variable")
    return grpc.aio.insecure_channel(
        address,
        options=[("grpc.service_config", _RETRY_POLICY), ("grpc.enable_retries", 1)],
        interceptors=token_interceptors(signer),
    )
