"""Serving the console: `/` is its page, `/console/{path}` its assets, all public (the page asks
for a token itself, and keeps it in the tab's session storage), none in the OpenAPI document.

Every reply carries a Content-Security-Policy that allows scripts, styles and requests from this
origin only: no inline script, no remote origin, no framing. The files revalidate by ETag on each
load (`no-cache`), so a daemon upgraded under an open tab serves its new console on reload.
"""

from __future__ import annotations

from aiohttp import web

from smemd.console import assets
from smemd.errors import NotFound
from smemd.http.route import Route

CSP = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])  # fmt: skip
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}
ASSETS = web.AppKey("console_assets", dict)


def _serve(request: web.Request, name: str) -> web.Response:
    asset: assets.Asset | None = request.app[ASSETS].get(name)
    if asset is None:
        raise NotFound("no such console file", f"{request.path} is not part of the console")
    headers = dict(HEADERS, ETag=asset.etag, Vary="Accept-Encoding")
    if asset.etag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    body = asset.body
    if asset.gzipped is not None and "gzip" in request.headers.get("Accept-Encoding", ""):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    response = web.Response(body=body, headers=headers)
    response.content_type, _, charset = asset.content_type.partition("; charset=")
    if charset:
        response.charset = charset
    return response


async def page(request: web.Request) -> web.Response:
    return _serve(request, "index.html")


async def asset(request: web.Request) -> web.Response:
    return _serve(request, request.match_info["path"])


ROUTES = [
    Route(
        method="GET", path="/", handler=page, public=True, page=True, content_type="text/html",
        summary="The console's page",
    ),
    Route(
        method="GET", path="/console/{path:.+}", handler=asset, public=True, page=True,
        content_type="*/*", summary="A file of the console (script, style, image)",
    ),
]  # fmt: skip
