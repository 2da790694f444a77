"""JSON in and out of handlers: request bodies decoded into Structs, replies encoded from them."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
import numpy as np
from aiohttp import web

from smemd.api import bodies
from smemd.errors import BadRequest, describe_validation_error
from smemd.protocol import ErrorBody

T = TypeVar("T")

# Deeper than any body smem takes (a filter's five levels of groups are about a dozen), and far
# below where the decoder, which recurses once per level, would fail.
MAX_JSON_DEPTH = 32
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))

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
    """Read and validate a JSON body; every failure is a 4xx that names what is wrong."""
    raw = await bodies.read(request)
    if not raw.strip():
        raise BadRequest("request body is empty", "send a JSON object")
    check_depth(raw)
    try:
        result: T = _decoder(type_).decode(raw)
    except msgspec.ValidationError as err:
        raise BadRequest("invalid request body", describe_validation_error(err)) from err
    except msgspec.DecodeError as err:
        raise BadRequest("malformed JSON", str(err)) from err
    return result


def check_depth(raw: bytes) -> None:
    """Refuse JSON nested deeper than MAX_JSON_DEPTH before anything decodes it."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return
    # Brackets inside strings do not nest: drop the strings, then everything but brackets.
    brackets = np.frombuffer(_STRING.sub(b'""', raw).translate(None, _NOT_BRACKETS), np.uint8)
    opening = (brackets == ord("[")) | (brackets == ord("{"))
    if int(np.cumsum(np.where(opening, 1, -1)).max(initial=0)) > MAX_JSON_DEPTH:
        raise BadRequest(
            "JSON nested too deeply", f"$: more than {MAX_JSON_DEPTH} levels of [ and {{"
        )
