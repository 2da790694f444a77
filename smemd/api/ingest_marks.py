"""The ingest id of a request that adds documents (smemd.engine.ingest.ingest_ids): taken from
the request's `Smem-Ingest-Id` header when the client names one, else made by the first
document added, and answered in the same header."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.engine.ingest import ingest_ids


@web.middleware
async def mark_ingests(request: web.Request, handler: Handler) -> web.StreamResponse:
    given = request.headers.get(ingest_ids.HEADER)
    with ingest_ids.marking(ingest_ids.checked(given) if given is not None else None) as mark:
        response = await handler(request)
    if mark.used and mark.id is not None and not response.prepared:
        response.headers[ingest_ids.HEADER] = mark.id
    return response
