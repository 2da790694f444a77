"""`GET /ns/{ns}/export`: the namespace as JSON Lines (smemd.protocol.exports), streamed as it is
read; gzip'd in transit (`Content-Encoding: gzip`) when the request accepts it, so a client that
keeps the bytes as they came saves a .jsonl.gz file. The status is decided before the first byte
(404 for a namespace that does not exist); a failure after it ends the body without the trailer
line, which is how a reader knows the export was cut off."""

from __future__ import annotations

import logging

from aiohttp import hdrs, web

from smemd.api import params
from smemd.api.middleware import REQUEST_ID_HEADER, request_id
from smemd.errors import SmemError
from smemd.http.route import Route
from smemd.store import deadline

log = logging.getLogger("smemd.api")


async def export(request: web.Request) -> web.StreamResponse:
    ns = params.namespace(request)
    lines = params.engine(request).exports.lines(ns)
    with deadline.lifted():  # as long as the namespace is large: the client bounds its wait
        try:
            first = await anext(lines)
        except BaseException:
            await lines.aclose()
            raise
        response = web.StreamResponse()
        response.content_type = "application/x-ndjson"
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in ns)[:100]
        response.headers["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        response.headers[REQUEST_ID_HEADER] = request_id.get()
        if "gzip" in request.headers.get(hdrs.ACCEPT_ENCODING, "").lower():
            response.enable_compression(web.ContentCoding.gzip)
        await response.prepare(request)
        try:
            chunk = first
            while True:
                await response.write(chunk)
                try:
                    chunk = await anext(lines)
                except StopAsyncIteration:
                    break
        except SmemError as err:  # too late for a status: the missing trailer tells
            log.warning("export of %s cut off: %s (%s)", ns, err.message, err.details)
            response.force_close()
        finally:
            await lines.aclose()
    return response


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/export", handler=export, namespace_from="path",
        content_type="application/x-ndjson",
        summary="The namespace as JSON Lines: every document, chunk, memory version, relation,"
        " entity, judgement, label and retraction",
        description="The first line is a header (`format` smem-export, `version` 1), the last a"
        " trailer with the count of each kind (a body without it was cut off); gzip'd in transit"
        " when the request accepts it. Read as of one moment while writes go on. The"
        " format is described in the README (Backups and moving memory).",
    ),
]  # fmt: skip
