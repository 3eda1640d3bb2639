"""Errors a service raises for a caller; the gRPC layer turns each into its status code."""

from __future__ import annotations

import grpc


class ServiceError(Exception):
    """A refusal with a message written for people; nothing was changed."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(ServiceError):
    """The request itself is wrong, whatever the state."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class FailedPrecondition(ServiceError):
    """The request is well formed but the current state does not allow it."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class NotFound(ServiceError):
    """The named thing does not exist."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(ServiceError):
    """The thing to create exists already."""

    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(ServiceError):
    """The acting player may not do this."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(ServiceError):
    """The caller did not prove who it is."""

    code = grpc.StatusCode.UNAUTHENTICATED


class ResourceExhausted(ServiceError):
    """A limit was reached; retry later (after `retry_after_ms` when known)."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, retry_after_ms: int = 0) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


class Unavailable(ServiceError):
    """Something this call needs is out of reach for now; calling again later may succeed."""

    code = grpc.StatusCode.UNAVAILABLE


class RetryLater(Exception):
    """Raised by a handler whose work must be done again, the event being sound (state it relied on was lost).

    The consumer retries it for as long as it lasts and never sets the event aside.
    """
