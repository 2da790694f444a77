"""The aiohttp application that both listeners serve, built from the route tables."""

from __future__ import annotations

from aiohttp import web

from smemd.api import (
    answers,
    buckets,
    calibration,
    documents,
    entities,
    entity_aliases,
    files,
    graph,
    hosted_only,
    lanes,
    memories,
    namespaces,
    nodes,
    openapi,
    organization,
    overview,
    recall,
    recent,
    retraction,
    review,
    status,
)
from smemd.api.legacy import (
    v3_changes,
    v3_documents,
    v3_reads,
    v3_search,
    v4_memories,
    v4_profile,
    v4_search,
)
from smemd.api.middleware import authorize, observe, render_errors
from smemd.api.route import Route
from smemd.api.state import STATE, ApiState
from smemd.console import assets, pages

ROUTES: list[Route] = [
    *status.ROUTES,
    *openapi.ROUTES,
    *documents.ROUTES,
    *files.ROUTES,
    *recall.ROUTES,
    *memories.ROUTES,
    *retraction.ROUTES,
    *graph.ROUTES,
    # The fixed paths (`/entities/suggestions`…) before the entity by id or name.
    *entity_aliases.ROUTES,
    *entities.ROUTES,
    *review.ROUTES,
    *namespaces.ROUTES,
    *answers.ROUTES,
    *lanes.ROUTES,
    *nodes.ROUTES,
    *calibration.ROUTES,
    *recent.ROUTES,
    *overview.ROUTES,
    *buckets.ROUTES,
    *organization.ROUTES,
    *hosted_only.ROUTES,
    *v4_search.ROUTES,
    *v4_profile.ROUTES,
    *v4_memories.ROUTES,
    *v3_documents.ROUTES,
    *v3_changes.ROUTES,
    *v3_reads.ROUTES,
    *v3_search.ROUTES,
]


def create_app(state: ApiState) -> web.Application:
    app = web.Application(
        middlewares=[observe, render_errors, authorize],
        client_max_size=state.max_body_bytes,
    )
    app[STATE] = state
    app[pages.ASSETS] = assets.load()
    for route in [*ROUTES, *pages.ROUTES]:
        for made in route.register(app.router):
            state.routes[made] = route
    return app
