"""The OpenAPI 3.1 description of the API, generated from the route table and the msgspec types.

Nothing here is written by hand per route: a route's summary, role, path, query, body and reply
come from its `Route`, and every schema from the Struct that decodes or encodes it, so the
document cannot say something the daemon does not do. Errors share one schema, `ErrorBody`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec
from aiohttp import web

from smemd import __version__
from smemd.api.state import STATE
from smemd.http.route import Route
from smemd.protocol import ErrorBody
from smemd.protocol.memory import NAMESPACE_PATTERN

REF = "#/components/schemas/{name}"
# `{name}` or `{name:regex}` in an aiohttp path.
_PARAMETER = re.compile(r"\{(?P<name>[A-Za-z_]+)(?::(?P<regex>[^}]+))?\}")
_PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "ns": {"type": "string", "pattern": NAMESPACE_PATTERN},
    "tag": {"type": "string", "pattern": NAMESPACE_PATTERN},  # v3's name for a namespace
}
_ROLES = {
    "read": "any token",
    "write": "a token with role write or admin",
    "admin": "the Unix socket, or a token with role admin",
}


def document(routes: Iterable[Route]) -> dict[str, Any]:
    routes = list(routes)
    types = {t for r in routes for t in (r.body, r.reply, r.query, r.form) if t is not None}
    _, components = msgspec.json.schema_components(
        sorted([ErrorBody, *types], key=lambda t: getattr(t, "__name__", str(t))),
        ref_template=REF,
    )
    for struct in types | {ErrorBody}:
        _close(components, struct)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        path, parameters = _path(route.path)
        if route.query is not None:
            parameters += _query_parameters(components[route.query.__name__])
        operation: dict[str, Any] = {
            "operationId": _operation_id(route.method, path),
            "summary": route.summary,
            "description": _description(route),
            "tags": [route.handler.__module__.rsplit(".", 1)[-1]],
            "parameters": parameters,
            "responses": _responses(route),
            "security": [] if route.public else [{"bearer": []}],
        }
        if route.deprecated:
            operation["deprecated"] = True
        body = _request_body(route, components)
        if body is not None:
            operation["requestBody"] = body
        paths.setdefault(path, {})[route.method.lower()] = operation
    for used_inline in {r.query for r in routes} | {r.form for r in routes}:
        if used_inline is not None:
            components.pop(used_inline.__name__, None)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "smem",
            "version": __version__,
            "description": "A local memory layer for AI agents: the Supermemory v5 API and "
            "smem's own /v1 routes. Every error is {error, details} with its status.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _path(template: str) -> tuple[str, list[dict[str, Any]]]:
    parameters = []
    for match in _PARAMETER.finditer(template):
        name, regex = match["name"], match["regex"]
        schema = _PATH_SCHEMAS.get(name, {"type": "string", "minLength": 1})
        if regex is not None and re.fullmatch(r"[A-Za-z|]+", regex):
            schema = {"enum": regex.split("|")}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return _PARAMETER.sub(lambda m: "{" + m["name"] + "}", template), parameters


def _query_parameters(schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema["properties"].items():
        parameter: dict[str, Any] = {
            "name": name, "in": "query", "required": name in required, "schema": prop,
        }  # fmt: skip
        if prop.get("type") == "array":
            parameter.update(style="form", explode=True)
        parameters.append(parameter)
    return parameters


def _request_body(route: Route, components: dict[str, Any]) -> dict[str, Any] | None:
    if route.body is not None:
        schema = {"$ref": REF.format(name=route.body.__name__)}
        return {
            "required": not route.body_optional,
            "content": {"application/json": {"schema": schema}},
        }
    if route.form is not None:
        form = dict(components[route.form.__name__])
        # A file part is bytes as sent, not the base64 text msgspec describes for JSON.
        form["properties"] = {
            name: {"type": "string", "format": "binary"} if name == "file" else prop
            for name, prop in form["properties"].items()
        }
        return {"required": True, "content": {"multipart/form-data": {"schema": form}}}
    if route.streamed is not None:
        return {"required": True, "content": {route.streamed: {"schema": {"type": "string"}}}}
    return None


def _responses(route: Route) -> dict[str, Any]:
    if route.content_type == "application/json":
        schema = {"$ref": REF.format(name=route.reply.__name__)} if route.reply else {}
    else:
        schema = {"type": "string"}
    error = {"$ref": REF.format(name="ErrorBody")}
    success: dict[str, Any] = {"description": route.summary}
    if route.status != 204:  # No Content: no body, so no content type
        success["content"] = {route.content_type: {"schema": schema}}
    return {
        str(route.status): success,
        "default": {
            "description": "an error: 400 bad input (details name the field), 401 no token, "
            "403 not allowed (or a page of another origin), 404, 405, 408 body too slow, 409, "
            "413 too large, 415 not JSON (or, for an upload, not multipart), 421 Host not "
            "smemd's, 503 unavailable or timed out",
            "content": {"application/json": {"schema": error}},
        },
    }


def _description(route: Route) -> str:
    who = _ROLES[route.role] if not route.public else "anyone, without a token"
    parts = [route.description or route.summary, f"Who: {who}."]
    if route.namespace_from == "every":
        parts.append("A token limited to some namespaces is refused (403).")
    elif route.namespace_from == "listing":
        parts.append("A token limited to some namespaces sees only those.")
    elif route.namespace_from in ("path", "body"):
        parts.append("The namespace must be one of the token's (else 403).")
    return " ".join(parts)


def _operation_id(method: str, path: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method.lower()}_{words}"


def _close(components: dict[str, Any], struct: Any) -> None:
    """Bodies that refuse unknown fields say so: a generator then sends none."""
    config = getattr(struct, "__struct_config__", None)
    schema = components.get(getattr(struct, "__name__", ""))
    if config is not None and config.forbid_unknown_fields and schema is not None:
        schema["additionalProperties"] = False


async def openapi(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if state.openapi is None:
        state.openapi = msgspec.json.encode(
            document(r for r in dict.fromkeys(state.routes.values()) if not r.page)
        )
    return web.Response(body=state.openapi, content_type="application/json")


ROUTES = [
    Route(
        method="GET", path="/v1/openapi.json", handler=openapi, public=True,
        summary="This document: every route, generated from the route table and its types",
    ),
]  # fmt: skip
