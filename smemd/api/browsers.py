"""What a web page may do with smemd: the Host and Origin rules, and CORS for invited origins.

A daemon on 127.0.0.1 is reachable from every page its user opens, and a page needs no
permission to send a "simple" request (a form, a no-cors fetch) or to point its own name at
127.0.0.1 (DNS rebinding). So, on TCP, for every route but the health check:

- the `Host` header must name the address the connection reached, `localhost` (or a name under
  `.localhost`), or a name in `[api] allow-hosts`; any other is 421. A rebound page's requests
  carry its own name, so it can read nothing;
- a request a page sent from another origin is 403, unless `[api] allow-origins` lists that
  origin. A browser says where a request comes from in `Origin` (always, for anything but a GET
  or HEAD) and in `Sec-Fetch-Site`; smemd's own origin is the one the Host names, so its console
  needs no entry. A link followed from another site (a top-level GET) still opens the console.

An invited origin's pages get CORS answers: the preflight, and the headers that let them read
a reply. The Unix socket is out of every browser's reach, and none of this applies to it.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.api.middleware import is_local
from smemd.api.state import STATE
from smemd.api.wire import error_reply
from smemd.config import ApiConfig
from smemd.http.origins import (
    DEFAULT_PORTS,
    Origin,
    check_host_name,
    is_loopback_name,
    parse_host,
    parse_origin,
    same_address,
)

METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"
REQUEST_HEADERS = "Authorization, Content-Type, X-Request-Id"
EXPOSED_HEADERS = "X-Request-Id, Retry-After"
PREFLIGHT_MAX_AGE_S = 600
# Sec-Fetch-Site values of a request some other site's (or another port's) page made.
_FROM_ELSEWHERE = ("cross-site", "same-site")


class BrowserRules:
    """The configured origins and host names, parsed once (the config has checked them)."""

    def __init__(self, api: ApiConfig) -> None:
        self.origins = frozenset(parse_origin(o) for o in api.allow_origins)
        self.hosts = frozenset(check_host_name(h) for h in api.allow_hosts)

    def host_refusal(self, request: web.Request) -> web.Response | None:
        """400 for a Host that is no host, 421 for one this smemd is not; None when it passes."""
        given = request.headers.get("Host")
        if given is None:  # HTTP/1.0 may omit it; no browser does
            return None
        try:
            host = parse_host(given).host
        except ValueError as err:
            return error_reply(400, "invalid Host header", str(err))
        if is_loopback_name(host) or host in self.hosts or _reached(request, host):
            return None
        return error_reply(
            421,
            "misdirected request",
            f"Host {given[:100]!r} is neither this smemd's address nor localhost; if smemd is"
            " reached by that name, add it to [api] allow-hosts",
        )

    def origin_refusal(self, request: web.Request, invited: Origin | None) -> web.Response | None:
        """403 for a request a page of another origin sent, unless that origin is invited."""
        given = request.headers.get("Origin")
        if given is not None:
            if invited is not None or _is_own(given, request.headers.get("Host", "")):
                return None
            return error_reply(
                403,
                "origin not allowed",
                f"pages of {given[:100]!r} may not call smemd; to let them, add the origin to"
                " [api] allow-origins",
            )
        site = request.headers.get("Sec-Fetch-Site", "")
        if site in _FROM_ELSEWHERE and request.headers.get("Sec-Fetch-Mode") != "navigate":
            return error_reply(
                403,
                "origin not allowed",
                f"a page of another site sent this (Sec-Fetch-Site: {site}); to let it, add its"
                " origin to [api] allow-origins",
            )
        return None

    def invited(self, request: web.Request) -> Origin | None:
        """The request's origin when `[api] allow-origins` lists it."""
        given = request.headers.get("Origin")
        if given is None or not self.origins:
            return None
        try:
            origin = parse_origin(given)
        except ValueError:
            return None
        return origin if origin in self.origins else None


RULES = web.AppKey("browser_rules", BrowserRules)


@web.middleware
async def guard_browsers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The Host and Origin rules on TCP; CORS for invited origins."""
    state = request.app[STATE]
    route = state.routes.get(request.match_info.route)
    if is_local(request) or (route is not None and route.from_anywhere):
        return await handler(request)
    rules = request.app[RULES]
    refusal = rules.host_refusal(request)
    invited = rules.invited(request)
    if refusal is None:
        refusal = rules.origin_refusal(request, invited)
    if refusal is not None:
        return refusal
    if invited is None:
        return await handler(request)
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        return _preflight(request)
    try:
        response = await handler(request)
    except web.HTTPException as exc:  # a redirect: the page may follow it
        _allow(exc, request)
        raise
    _allow(response, request)
    return response


def _preflight(request: web.Request) -> web.Response:
    response = web.Response(status=204)
    _allow(response, request)
    response.headers["Access-Control-Allow-Methods"] = METHODS
    response.headers["Access-Control-Allow-Headers"] = REQUEST_HEADERS
    response.headers["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_S)
    # Chromium asks before a public page may reach a private address (Private Network Access).
    if request.headers.get("Access-Control-Request-Private-Network") == "true":
        response.headers["Access-Control-Allow-Private-Network"] = "true"
    response.headers["Vary"] = (
        "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
    )
    return response


def _allow(response: web.StreamResponse, request: web.Request) -> None:
    response.headers["Access-Control-Allow-Origin"] = request.headers["Origin"]
    response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
    response.headers.setdefault("Vary", "Origin")


def _reached(request: web.Request, host: str) -> bool:
    """Whether `host` is the address the connection came in on (any port: a forwarded one)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    return isinstance(sockname, tuple) and same_address(host, str(sockname[0]))


def _is_own(given: str, host_header: str) -> bool:
    """Whether an Origin is smemd's own: the host and port its Host header names."""
    try:
        origin, host = parse_origin(given), parse_host(host_header)
    except ValueError:  # "null" (a sandboxed frame, a file), or no origin at all
        return False
    port = host.port if host.port is not None else DEFAULT_PORTS[origin.scheme]
    return origin.host == host.host and origin.port == port
