"""Calls SDK 5 offers that only the hosted Supermemory service can answer: feedback to its team
and connectors that sync from Notion, Google Drive, Gmail and the like. A self-hosted smem
answers them 404 `not offered` with a sentence saying so: the SDK raises `NotFoundError` (a 501
would be an `InternalServerError`, which the SDK retries twice, in vain)."""

from __future__ import annotations

from aiohttp import web

from smemd.errors import NotFound
from smemd.http.route import Method, NamespaceFrom, Route

_WHY = {
    "feedback": "feedback goes to the hosted Supermemory service's team",
    "connectors": "connectors sync third-party accounts through the hosted Supermemory service",
}


class NotOffered(NotFound):
    code = "not_offered"


async def not_offered(request: web.Request) -> web.Response:
    what = "feedback" if request.path.startswith("/feedback") else "connectors"
    raise NotOffered("not offered", f"{_WHY[what]}; a self-hosted smem does not offer it")


def _route(method: Method, path: str, namespace_from: NamespaceFrom = "none") -> Route:
    return Route(
        method=method, path=path, handler=not_offered, namespace_from=namespace_from,
        status=404, summary="Not offered by a self-hosted smem (hosted Supermemory only): 404",
    )  # fmt: skip


ROUTES = [
    _route("POST", "/feedback"),
    _route("GET", "/connectors"),
    _route("GET", "/ns/{ns}/connectors", "path"),
    _route("POST", "/ns/{ns}/connectors", "path"),
    _route("GET", "/ns/{ns}/connectors/{id}", "path"),
    _route("PATCH", "/ns/{ns}/connectors/{id}", "path"),
    _route("DELETE", "/ns/{ns}/connectors/{id}", "path"),
    _route("POST", "/ns/{ns}/connectors/{id}/sync", "path"),
]
