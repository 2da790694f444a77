"""Re-deriving a namespace's memory from its documents (smemd.engine.rederive): start it, read
its progress and then its diff, apply it or discard it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.api import params
from smemd.api.wire import reply
from smemd.engine.rederive import Rederivations
from smemd.http.route import Route
from smemd.protocol.retraction import Rederived
from smemd.store import deadline

Step = Callable[[Rederivations], Callable[[str], Awaitable[Rederived]]]


def _handler(step: Step) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        ns = params.namespace(request)
        with deadline.lifted():  # each walks the namespace whole, once
            return reply(await step(params.engine(request).rederivations)(ns))

    return handle


_PATH = "/ns/{ns}/rederive"
ROUTES = [
    Route(
        method="POST", path=_PATH, handler=_handler(lambda r: r.start), role="write",
        namespace_from="path", reply=Rederived,
        summary="Re-derive the namespace's memory from its documents, into its shadow",
        description="Every document but the retracted is added again, in date order, to the"
        " shadow namespace `NS:rederive`, where today's rules read it afresh; the namespace"
        " serves as it was meanwhile. Answers at once, `running`; GET gives the diff once"
        " ready. 409 while one exists.",
    ),
    Route(
        method="GET", path=_PATH, handler=_handler(lambda r: r.diff), namespace_from="path",
        reply=Rederived,
        summary="A re-derivation's progress, then what it would change",
        description="`counts` and `examples` of memories added and gone, retyped and rechained"
        " (matched by text), relations gained and lost; `notCarried`, what an apply loses.",
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
