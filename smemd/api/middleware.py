"""The three middlewares, outermost first: observe, render errors, authorize."""

from __future__ import annotations

import asyncio
import re
import socket
import time
import uuid

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd import log
from smemd.api import params
from smemd.api.access import ANONYMOUS, PRINCIPAL, PUBLIC, SOCKET, Principal, Tokens
from smemd.api.activity import Seen
from smemd.api.state import STATE
from smemd.api.wire import error_reply
from smemd.errors import ClientGone, Forbidden, SmemError, Unauthorized
from smemd.http.route import Route, allows
from smemd.store import creators, deadline

REQUEST_ID_HEADER = "X-Request-Id"
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# A bearer token's characters (RFC 6750 b64token); anything else is no token, and is never
# encoded, compared or logged.
_TOKEN68 = re.compile(r"[A-Za-z0-9._~+/-]{1,4096}=*")
# The id of the request being handled: smemd.log marks every line written while it runs.
request_id = log.request_id


def route_label(request: web.Request) -> str:
    """The route's template (`/ns/{ns}/search`), so metrics do not grow with every namespace."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


def is_local(request: web.Request) -> bool:
    """True on the Unix socket, whose file permissions are its access control."""
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    return sock is not None and sock.family == socket.AF_UNIX


@web.middleware
async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give the request an id, count it, time it, and write the access log line."""
    state = request.app[STATE]
    given = request.headers.get(REQUEST_ID_HEADER, "")
    rid = given if _CLIENT_REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
    request_id.set(rid)
    task = asyncio.current_task()
    # Checked and joined with no await between, so the stop's drain sees every request it must
    # wait for, and none that came after it began.
    is_refused = state.is_stopping
    if task is not None and not is_refused:
        state.in_flight.add(task)
    started = time.perf_counter()
    status = 500
    try:
        response: web.StreamResponse
        if is_refused:
            state.refused.add(request.task)
            request.task.add_done_callback(state.refused.discard)
            response = _stopping_reply()
        else:
            with deadline.within(state.config.api.request_timeout_s):
                response = await handler(request)
            if state.is_stopping:
                # Finished during the stop: no next request on this connection, which would
                # only be refused.
                response.force_close()
        status = response.status
        response.headers[REQUEST_ID_HEADER] = rid
        return response
    except web.HTTPException as exc:  # the < 400 ones render_errors lets through
        status = exc.status
        exc.headers[REQUEST_ID_HEADER] = rid
        raise
    except asyncio.CancelledError:  # cut by the stop at its deadline: the connection closes
        status = 503
        raise
    finally:
        elapsed = time.perf_counter() - started
        if task is not None:
            state.in_flight.discard(task)
        route = route_label(request)
        state.metrics.observe(route, request.method, status, elapsed)
        matched = state.routes.get(request.match_info.route)
        is_page = matched is not None and matched.page  # the console's files: not kept as recent
        seen = None if is_page else Seen(request.method, status, rid)
        state.activity.observe(route, elapsed, seen=seen)
        caller = request.get(PRINCIPAL)  # None: refused before authorize knew who it was
        fields = {
            "route": route,  # the template, never the path or query: a search's text is content
            "method": request.method,
            "status": status,
            "duration_ms": round(elapsed * 1000, 2),
            "listener": "unix" if is_local(request) else request.remote or "-",
            "token": caller.name if caller else None,  # the token's name, never its secret
        }
        log.access.info(
            '%s "%s %s" %d %.2fms token=%s', fields["listener"], request.method, route, status,
            fields["duration_ms"], fields["token"] or "-", extra={"fields": fields},
        )  # fmt: skip


def _stopping_reply() -> web.Response:
    """503 at once, without reading the body; Connection: close, as this daemon is going away."""
    response = error_reply(503, "stopping", "smemd is shutting down; retry once it is back up")
    response.force_close()
    return response


@web.middleware
async def render_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error leaves as `{"error", "details"}` with its status; never a traceback."""
    try:
        return await handler(request)
    except SmemError as err:
        return _error_reply(err)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_exception_reply(request, exc)
    except ConnectionError:  # the client left while its reply was being made: nobody to tell
        return _error_reply(ClientGone("client went away", "the connection closed"))
    except Exception:
        log.api.exception("unhandled error in %s %s", request.method, request.path)
        return error_reply(500, "internal error", f"logged with request id {request_id.get()}")


def _error_reply(err: SmemError) -> web.Response:
    response = error_reply(err.status, err.message, err.details)
    if isinstance(err, Unauthorized):
        response.headers["WWW-Authenticate"] = 'Bearer realm="smem"'
    if err.retry_after is not None:
        response.headers["Retry-After"] = str(err.retry_after)
    if err.closes_connection:
        response.force_close()
    return response


def _http_exception_reply(request: web.Request, exc: web.HTTPException) -> web.Response:
    if isinstance(exc, web.HTTPNotFound):
        details = f"no route {request.method} {request.path}"
    elif isinstance(exc, web.HTTPMethodNotAllowed):
        details = f"{request.path} allows {', '.join(sorted(exc.allowed_methods))}"
    else:
        details = exc.text or ""
    response = error_reply(exc.status, exc.reason.lower(), details)
    if "Allow" in exc.headers:
        response.headers["Allow"] = exc.headers["Allow"]
    return response


@web.middleware
async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Who calls (the socket, a token, or nobody), and whether the route lets them."""
    state = request.app[STATE]
    route = state.routes.get(request.match_info.route)  # None: no route, or one a test added
    caller = request[PRINCIPAL] = _caller(request, state.tokens, route)
    if route is not None:
        _check(route, caller, request)
    if caller is SOCKET:
        return await handler(request)
    with creators.acting_as(creators.Creator(caller.name, state.config.api.max_namespaces)):
        return await handler(request)


def _caller(request: web.Request, tokens: Tokens, route: Route | None) -> Principal:
    if is_local(request):
        return SOCKET
    found = tokens.find(_bearer(request))
    if found is not None:
        return found
    if route is not None and route.public:
        return PUBLIC
    if tokens.required:
        raise Unauthorized("missing or wrong token", "send Authorization: Bearer <token>")
    return ANONYMOUS


def _check(route: Route, caller: Principal, request: web.Request) -> None:
    if not allows(caller.role, route.role):
        if route.role == "admin":
            raise Forbidden("admin route", "use the Unix socket, or a token with role admin")
        raise Forbidden(f"needs role {route.role}", f"token {caller.name!r} has role {caller.role}")
    if route.namespace_from == "path":
        params.check_sees(request, request.match_info.get("ns", ""))
    elif route.namespace_from == "every" and not caller.scope.is_every:
        raise Forbidden(
            "route spans every namespace",
            f"token {caller.name!r} is limited to some; use one for every namespace",
        )


def _bearer(request: web.Request) -> str:
    """The bearer token, or "" when there is none or it is not one (RFC 6750's characters)."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not _TOKEN68.fullmatch(credentials):
        return ""
    return credentials
