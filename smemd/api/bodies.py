"""Request bodies: the media type a route takes, and how long a body may take to arrive.

A request that changes something (POST, PUT, PATCH, DELETE) and carries a body must send
`application/json`, or `multipart/form-data` to a route that takes an
upload, or the media type of a route that streams its body (an import's JSON Lines): anything
else is 415. A browser sends text/plain, form-encoded and multipart bodies to
any origin without asking first; refusing the first two here, and every foreign page's request
in `browsers`, leaves a page no way to write.

A body is read within `[api] body-timeout-s` of the handler's start, or 408 and the connection
closes: a JSON body here, whole, before the handler runs, so that no handler waits on a slow
client; a multipart body as it streams through `forms`, under the same deadline; a streamed
body a block at a time (`blocks`), each within the deadline. A client that
goes away mid-body is a 499 (`ClientGone`), not an error of smemd's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.api.state import STATE
from smemd.errors import BadRequest, BodyTimedOut, ClientGone, PayloadTooLarge, UnsupportedMediaType

CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON = "application/json"
FORM = "multipart/form-data"


@web.middleware
async def read_bodies(request: web.Request, handler: Handler) -> web.StreamResponse:
    route = request.app[STATE].routes.get(request.match_info.route)
    takes_form = route is not None and route.form is not None
    streamed = route.streamed if route is not None else None
    if route is not None and request.method in CHANGING:
        _check_media_type(request, FORM if takes_form else streamed or JSON)
    if request.body_exists and not takes_form and not streamed:
        await read(request)
    return await handler(request)


async def read(request: web.Request) -> bytes:
    """The whole body (read once; later calls return it again), within the size limit and the
    body deadline."""
    limit = request.app[STATE].max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(request.content_length, limit)
    try:
        async with arriving(request):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(None, limit) from None


@contextlib.asynccontextmanager
async def arriving(request: web.Request) -> AsyncIterator[None]:
    """Reading a body in this block: within the body deadline (408), a client that leaves is
    `ClientGone`, a body HTTP cannot frame is a 400."""
    timeout_s = request.app[STATE].config.api.body_timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            yield
    except TimeoutError:
        raise BodyTimedOut(
            "request body too slow",
            f"the body did not arrive within {timeout_s:g} s ([api] body-timeout-s)",
        ) from None
    except ConnectionError:
        raise ClientGone(
            "client went away", "the connection closed before the body ended"
        ) from None
    except web.RequestPayloadError as err:  # a broken chunked encoding, a cut compressed body
        raise BadRequest("malformed request body", str(err)[:200]) from None


async def blocks(request: web.Request) -> AsyncIterator[bytes]:
    """A streamed body as it arrives, of any length: each block within the body deadline."""
    while True:
        async with arriving(request):
            block = await request.content.readany()
        if not block:
            return
        yield block


def _check_media_type(request: web.Request, wanted: str) -> None:
    if not request.body_exists:
        return  # nothing sent, nothing to type (clients label an empty body as they please)
    given = request.headers.get("Content-Type")
    if given is not None and request.content_type == wanted:
        return
    sent = f"Content-Type {given[:100]!r}" if given is not None else "a body with no Content-Type"
    raise UnsupportedMediaType(
        "unsupported media type",
        f"{request.method} {_template(request)} takes {wanted}; got {sent}",
    )


def _template(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else request.path


def _too_large(size: int | None, limit: int) -> PayloadTooLarge:
    sent = f"{size} bytes" if size is not None else "more than that"
    return PayloadTooLarge("request body too large", f"limit {limit} bytes, sent {sent}")
