"""Multipart forms: every part read within the body limit, every fault a 400 that names its field.

aiohttp's multipart reader raises what it meets in the bytes (ValueError, RuntimeError,
binascii.Error, LineTooLong, …) and streams past `client_max_size`, which only guards
`request.read()`. Here each call into it is wrapped, sizes are counted as parts arrive, and text
fields must be UTF-8, so a crafted form can neither fail the request with a 500 nor fill memory.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Collection
from typing import TypeVar

import msgspec
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import LineTooLong

from smemd.api import bodies
from smemd.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

MAX_FILENAME = 255  # what a file system takes for one name
CHUNK = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
T = TypeVar("T")


class Part(msgspec.Struct, frozen=True):
    name: str
    data: bytes
    filename: str = ""
    content_type: str = ""

    def text(self) -> str:
        """The part as UTF-8 text, or a 400 naming it."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BadRequest(
                "invalid form", f"$.{self.name}: not UTF-8 text (byte {err.start})"
            ) from None


async def read_form(request: web.Request, fields: Collection[str], limit: int) -> dict[str, Part]:
    """The parts of a multipart/form-data body by name, read within the body deadline; unknown
    or repeated fields are a 400."""
    if request.content_type != "multipart/form-data":
        raise UnsupportedMediaType(
            "expected multipart/form-data", f"got {request.content_type or 'no content type'}"
        )
    async with bodies.arriving(request):
        return await _read_parts(request, fields, limit)


async def _read_parts(request: web.Request, fields: Collection[str], limit: int) -> dict[str, Part]:
    reader = await _parsing(request.multipart(), "$")
    form: dict[str, Part] = {}
    room = limit
    while (part := await _parsing(reader.next(), "$")) is not None:
        if not isinstance(part, BodyPartReader):
            raise BadRequest("invalid form", "$: a part may not itself be multipart")
        name = part.name
        if name is None or name not in fields:
            shown = "a part without a name" if name is None else repr(name[:60])
            raise BadRequest("invalid form", f"$: unknown field {shown}")
        if name in form:
            raise BadRequest("invalid form", f"$.{name}: given more than once")
        data = await _read_part(part, name, room, limit)
        room -= len(data)
        form[name] = Part(
            name=name,
            data=data,
            filename=_filename(part, name),
            content_type=part.headers.get("Content-Type", ""),
        )
    return form


async def _read_part(part: BodyPartReader, name: str, room: int, limit: int) -> bytes:
    # A compressed part could inflate far past the limit, and no client compresses parts.
    if part.headers.get("Content-Encoding", "identity").lower() != "identity":
        raise BadRequest("invalid form", f"$.{name}: a compressed part (Content-Encoding)")
    raw = bytearray()
    while chunk := await _parsing(part.read_chunk(CHUNK), f"$.{name}"):
        raw += chunk
        if len(raw) > room:
            raise PayloadTooLarge("request body too large", f"limit {limit} bytes")
    try:  # Content-Transfer-Encoding: base64 or quoted-printable
        return bytes(part.decode(bytes(raw)))
    except Exception as err:
        raise BadRequest(
            "invalid form", f"$.{name}: cannot decode the part: {_reason(err)}"
        ) from None


def _filename(part: BodyPartReader, name: str) -> str:
    filename = part.filename or ""
    if len(filename) > MAX_FILENAME:
        raise BadRequest("invalid form", f"$.{name}: filename longer than {MAX_FILENAME}")
    if _CONTROL.search(filename):
        raise BadRequest("invalid form", f"$.{name}: filename holds control characters")
    return filename


async def _parsing(step: Awaitable[T], path: str) -> T:
    """Await one step of aiohttp's multipart parser; what it raises on bad bytes is a 400."""
    try:
        return await step
    except ConnectionError:
        raise  # the client went away: not the body's fault
    except Exception as err:
        raise BadRequest("malformed multipart body", f"{path}: {_reason(err)}") from None


def _reason(err: Exception) -> str:
    if isinstance(err, LineTooLong):
        return "a part's header is longer than 8190 bytes"
    # The first line only: aiohttp's parser errors go on to quote the offending bytes.
    text = str(getattr(err, "message", "") or err).split("\n", 1)[0].rstrip(": ")
    return text[:120] or type(err).__name__
