"""The aiohttp application that both listeners serve, built from the route tables."""

from __future__ import annotations

from aiohttp import web

from smemd.api import openapi
from smemd.api.bodies import read_bodies
from smemd.api.browsers import RULES, BrowserRules, guard_browsers
from smemd.api.control import backups, calibration, lanes, nodes, recent, status
from smemd.api.ingest_marks import mark_ingests
from smemd.api.legacy import (
    v3_changes,
    v3_documents,
    v3_reads,
    v3_search,
    v4_memories,
    v4_profile,
    v4_search,
)
from smemd.api.memory import (
    answers,
    buckets,
    documents,
    entities,
    entity_merges,
    exports,
    files,
    graph,
    hosted_only,
    imports,
    memories,
    namespaces,
    organization,
    overview,
    recall,
    rederive,
    retraction,
    review,
)
from smemd.api.middleware import authorize, observe, render_errors
from smemd.api.state import STATE, ApiState
from smemd.console import assets, pages
from smemd.http.route import Route

ROUTES: list[Route] = [
    *status.ROUTES,
    *backups.ROUTES,
    *openapi.ROUTES,
    *documents.ROUTES,
    *files.ROUTES,
    *exports.ROUTES,
    *imports.ROUTES,
    *rederive.ROUTES,
    *recall.ROUTES,
    *memories.ROUTES,
    *retraction.ROUTES,
    *graph.ROUTES,
    # The fixed paths (`/entities/suggestions`…) before the entity by id or name.
    *entity_merges.ROUTES,
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
    # Outermost first. The browser rules come before anything reads the request: a refused
    # page learns nothing, not even whether it needs a token; bodies are read once the caller
    # may call the route.
    app = web.Application(
        middlewares=[observe, guard_browsers, render_errors, authorize, mark_ingests, read_bodies],
        client_max_size=state.max_body_bytes,
    )
    app[STATE] = state
    app[RULES] = BrowserRules(state.config.api)
    app[pages.ASSETS] = assets.load()
    for route in [*ROUTES, *pages.ROUTES]:
        for made in route.register(app.router):
            state.routes[made] = route
    return app
