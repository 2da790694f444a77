"""Errors that reach a client: each carries its HTTP status and a stable code."""

from __future__ import annotations

import re

import msgspec


class SmemError(Exception):
    status = 500
    code = "internal"
    retry_after: int | None = None  # seconds, sent as Retry-After
    closes_connection = False  # the reply ends its connection (what is left of it is unread)

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class BadRequest(SmemError):
    status = 400
    code = "bad_request"


class Unauthorized(SmemError):
    status = 401
    code = "unauthorized"


class Forbidden(SmemError):
    status = 403
    code = "forbidden"


class NotFound(SmemError):
    status = 404
    code = "not_found"


class MethodNotAllowed(SmemError):
    status = 405
    code = "method_not_allowed"


class BodyTimedOut(SmemError):
    """The body did not arrive in time: the client is too slow, or holds the connection."""

    status = 408
    code = "request_timeout"
    closes_connection = True


class Conflict(SmemError):
    status = 409
    code = "conflict"


class PayloadTooLarge(SmemError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(SmemError):
    status = 415
    code = "unsupported_media_type"


class ClientGone(SmemError):
    """The client closed its connection before the request was read (nginx's 499): no one hears
    the reply, and nothing is wrong with smemd."""

    status = 499
    code = "client_closed_request"
    closes_connection = True


class Unavailable(SmemError):
    status = 503
    code = "unavailable"


class StorageFull(SmemError):
    """The store's disk is full: the request wrote nothing, and may be sent again later."""

    status = 507
    code = "storage_full"


class StorageUnavailable(Unavailable):
    """The store cannot be written or read (read-only file system, I/O error)."""

    code = "storage_unavailable"


class TimedOut(Unavailable):
    """The request's deadline passed: its store work was stopped, and it wrote nothing."""

    code = "timed_out"
    retry_after = 1


# What stops a request that writes item by item: the next item would fail the same way.
STORE_CANNOT_WRITE = (StorageFull, StorageUnavailable, TimedOut)


def is_storage_fault(err: BaseException) -> bool:
    """The store's disk, not the work, failed: the work is to be tried again, not failed."""
    return isinstance(err, StorageFull | StorageUnavailable)


_UNKNOWN_FIELD = re.compile(
    r"^Object contains unknown field `(?P<field>[^`]*)`(?: - at `(?P<at>[^`]*)`)?$"
)
_AT = re.compile(r"^(?P<message>.*) - at `(?P<at>[^`]*)`$", re.DOTALL)


def describe_validation_error(err: msgspec.ValidationError) -> str:
    """Word msgspec's message as `$.path.to.field: what is wrong`, unknown keys in the path."""
    text = str(err)
    unknown = _UNKNOWN_FIELD.match(text)
    if unknown:
        return f"{unknown['at'] or '$'}.{unknown['field']}: unknown field"
    located = _AT.match(text)
    if located:
        return f"{located['at']}: {located['message']}"
    return f"$: {text}"
