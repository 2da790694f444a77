"""`POST /v4/profile`: the v5 profile of the container tag's namespace, as v4 gave it (plain
strings, only the sections `include` names), and with `q` a v4 search beside it."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.legacy import tags, v4_search
from smemd.api.legacy.filters import legacy_filter
from smemd.api.wire import decode, reply
from smemd.engine.filters import Filter
from smemd.http.route import Route
from smemd.protocol.legacy_v4 import V4Profile, V4ProfileBody, V4ProfileResponse, V4Search

# The bucket every organisation has upstream: what "all configured buckets" means here.
DEFAULT_BUCKETS = ["preferences"]


async def profile(request: web.Request) -> web.Response:
    body = await decode(request, V4Profile)
    ns = tags.namespace_of(request, body.container_tag)
    translated = legacy_filter(body.filters, "$.filters") if body.filters is not None else None
    filter = translated if isinstance(translated, Filter) else params.filter_of(translated)
    sections = set(body.include or ("static", "dynamic", "buckets"))
    wants_buckets = "buckets" in sections and (body.include is not None or bool(body.buckets))
    buckets = (body.buckets or DEFAULT_BUCKETS) if wants_buckets else []
    built = await params.engine(request).profiles.build(ns, filter=filter, buckets=buckets)
    out = V4ProfileResponse(profile=V4ProfileBody())
    if "static" in sections:
        out.profile.static = [m.text for m in built.static]
    if "dynamic" in sections:
        out.profile.dynamic = [m.text for m in built.dynamic]
    if wants_buckets:
        out.profile.buckets = {
            name: [m.text for m in found] for name, found in built.buckets.items()
        }
    if body.q is not None:
        search = V4Search(
            q=body.q, container_tag=body.container_tag, threshold=body.threshold,
            filters=body.filters,
        )  # fmt: skip
        out.search_results = await v4_search.run(request, ns, search)
    return reply(out)


ROUTES = [
    Route(
        method="POST", path="/v4/profile", handler=profile, namespace_from="body", body=V4Profile,
        reply=V4ProfileResponse, deprecated=True,
        summary="Legacy v4 profile (containerTag): static and dynamic facts as strings, "
        "with search results when q is given",
    ),
]  # fmt: skip
