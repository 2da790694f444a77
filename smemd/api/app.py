"""The aiohttp application that both listeners serve."""

from __future__ import annotations

from aiohttp import web

from smemd.api import (
    answers,
    calibration,
    documents,
    files,
    lanes,
    memories,
    namespaces,
    nodes,
    recall,
)
from smemd.api.middleware import authorize, observe, render_errors
from smemd.api.routes import add_routes
from smemd.api.state import STATE, ApiState


def create_app(state: ApiState) -> web.Application:
    app = web.Application(
        middlewares=[observe, render_errors, authorize],
        client_max_size=state.max_body_bytes,
    )
    app[STATE] = state
    add_routes(app)
    for module in (documents, files, recall, memories, namespaces):
        module.add_routes(app.router)
    answers.add_routes(app.router)
    lanes.add_routes(app.router, state.admin_routes)
    nodes.add_routes(app.router, state.admin_routes)
    calibration.add_routes(app.router, state.admin_routes)
    return app
