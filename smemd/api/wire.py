"""JSON in and out of handlers: request bodies decoded into Structs, replies encoded from them."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from aiohttp import web

from smemd.api.state import STATE
from smemd.errors import BadRequest, PayloadTooLarge, describe_validation_error
from smemd.protocol import ErrorBody

T = TypeVar("T")

_encoder = msgspec.json.Encoder()


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    """One decoder per body type, built on first use: building is the slow part."""
    decoder = _decoders.get(type_)
    if decoder is None:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
    return decoder


def reply(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=_encoder.encode(body), status=status, content_type="application/json")


def error_reply(status: int, error: str, details: str = "") -> web.Response:
    return reply(ErrorBody(error=error, details=details), status)


async def decode(request: web.Request, type_: type[T]) -> T:
    """Read and validate a JSON body; every failure is a 400 or 413 that names what is wrong."""
    limit = request.app[STATE].max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(None, limit) from None
    if not raw.strip():
        raise BadRequest("request body is empty", "send a JSON object")
    try:
        result: T = _decoder(type_).decode(raw)
    except msgspec.ValidationError as err:
        raise BadRequest("invalid request body", describe_validation_error(err)) from err
    except msgspec.DecodeError as err:
        raise BadRequest("malformed JSON", str(err)) from err
    return result


def _too_large(size: int | None, limit: int) -> PayloadTooLarge:
    sent = f"{size} bytes" if size is not None else "more than that"
    return PayloadTooLarge("request body too large", f"limit {limit} bytes, sent {sent}")
