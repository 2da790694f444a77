"""The last requests the daemon answered, newest first, for the console's Activity view."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.state import STATE
from smemd.api.wire import reply
from smemd.http.route import Route
from smemd.protocol.recent import RECENT_KEPT, RecentRequests, RecentRequestsQuery


async def recent_requests(request: web.Request) -> web.Response:
    query = params.query(request, RecentRequestsQuery)
    seen = request.app[STATE].activity.recent(query.limit)
    return reply(RecentRequests(requests=seen, kept=RECENT_KEPT))


ROUTES = [
    Route(
        method="GET", path="/v1/requests", handler=recent_requests, namespace_from="every",
        query=RecentRequestsQuery, reply=RecentRequests,
        summary="The last requests answered, newest first: route template, status, duration",
        description="Routes are templates, never paths or query strings. The log holds every "
        "caller's requests, with the request ids clients chose (which may name anything), so "
        "a token limited to some namespaces is refused. The console's own files are left out.",
    ),
]  # fmt: skip
