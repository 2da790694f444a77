"""`POST /ns/{ns}/import`: an export (smemd.protocol.exports) put back into an empty namespace,
streamed in as JSON Lines (gzip'd or not) and checked whole before anything is written
(smemd.engine.imports)."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.bodies import blocks
from smemd.api.wire import reply
from smemd.http.route import Route
from smemd.protocol.exports import Imported, ImportQuery
from smemd.store import deadline


async def import_export(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    engine = params.engine(request)
    merge = params.query(request, ImportQuery).merge
    with deadline.lifted():  # as long as the file is large; each block arrives in time
        return reply(await engine.imports.load(ns, blocks(request), merge))


ROUTES = [
    Route(
        method="POST", path="/ns/{ns}/import", handler=import_export, role="write",
        namespace_from="path", streamed="application/x-ndjson", query=ImportQuery, reply=Imported,
        summary="Put an export back into an empty namespace: every version, time, relation,"
        " label and judgement as it was",
        description="The body is an export's JSON Lines (`GET /ns/{ns}/export`), gzip'd or not,"
        " under any namespace's name: its records go into this one. It is checked whole first:"
        " a line that is not a sound record, a reference to a record the file lacks, or a file"
        " cut off is a 400 naming the line and field; a namespace that holds data, or an id the"
        " store holds already, is a 409. With `merge`, a namespace with data takes the file"
        " beside it: a record whose id (or key) it holds is skipped (`skip`) or takes the held"
        " one's place (`replace`); an id another namespace holds, a custom id another of its"
        " documents has, or a memory chain left with two latest versions is a 409. Nothing is"
        " written unless everything is. Texts are embedded again; extraction does not run"
        " again.",
    ),
]  # fmt: skip
