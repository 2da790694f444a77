"""Re-deriving a namespace's memory from its documents (smemd.engine.rederive): start it, read
its progress and then its diff, apply it or discard it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.api import params
from smemd.api.access import principal
from smemd.api.wire import decode, reply
from smemd.engine.rederive import Rederivations
from smemd.errors import Forbidden
from smemd.http.route import Route
from smemd.protocol.retraction import Rederived, RederiveRequest
from smemd.store import deadline

Step = Callable[[Rederivations], Callable[[str], Awaitable[Rederived]]]


async def start(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, RederiveRequest) if await request.read() else RederiveRequest()
    if body.llama_url is not None and principal(request).role != "admin":
        # smemd would call the URL it is given: a model of one's choosing is an admin's word.
        raise Forbidden("admin only", "$.llamaUrl: naming a model takes an admin token")
    with deadline.lifted():
        url = body.llama_url.rstrip("/") if body.llama_url else None
        return reply(await params.engine(request).rederivations.start(ns, url))


def _handler(step: Step) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        ns = params.namespace(request)
        with deadline.lifted():  # each walks the namespace whole, once
            return reply(await step(params.engine(request).rederivations)(ns))

    return handle


_PATH = "/ns/{ns}/rederive"
ROUTES = [
    Route(
        method="POST", path=_PATH, handler=start, role="write", namespace_from="path",
        body=RederiveRequest, body_optional=True, reply=Rederived,
        summary="Re-derive the namespace's memory from its documents, into its shadow",
        description="Every document but the retracted is added again, in date order, to the"
        " shadow namespace `NS:rederive`, where today's rules read it afresh — by the daemon's"
        " own model, or by the llama-server `llamaUrl` names (admin only; 400 unless it"
        " answers with its model loaded); the namespace serves as it was meanwhile. Answers"
        " `running`; GET gives the diff once ready. 409 while one exists.",
    ),
    Route(
        method="GET", path=_PATH, handler=_handler(lambda r: r.diff), namespace_from="path",
        reply=Rederived,
        summary="A re-derivation's progress, then what it would change",
        description="`counts` and `examples` of memories added and gone, retyped and rechained"
        " (matched by text), relations gained and lost; `notCarried`, what an apply loses."
        " `state` is `none` while there is none.",
    ),
    Route(
        method="POST", path=_PATH + "/apply", handler=_handler(lambda r: r.apply), role="write",
        namespace_from="path", reply=Rederived,
        summary="Swap the re-derived memory in, in one transaction",
        description="409 while it runs, or if a document was added or changed since it began.",
    ),
    Route(
        method="DELETE", path=_PATH, handler=_handler(lambda r: r.discard), role="write",
        namespace_from="path", reply=Rederived, summary="Drop a re-derivation",
    ),
]  # fmt: skip
