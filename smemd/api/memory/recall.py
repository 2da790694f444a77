"""v5 recall routes: search, profile, and the three lists."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.hydration import Hydrated
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol.memory import (
    Fact,
    Included,
    ListBody,
    ListQuery,
    ListResponse,
    Profile,
    ProfileBody,
    ProfileResponse,
    Search,
    SearchResponse,
    SearchResult,
)
from smemd.protocol.namespaces import MemoryCount, MemoryCounts, MemoryCountsRequest
from smemd.store.records import Memory

RELATED_LIMIT = 5


async def search(request: web.Request) -> web.Response:
    started = time.perf_counter()
    ns = params.namespace(request)
    body = await decode(request, Search)
    if not body.query.strip():
        raise BadRequest("invalid request body", "$.query: must not be blank")
    engine = params.engine(request)
    query = params.search_query(engine, body.query, body, include_forgotten=body.include.forgotten)
    query.entity = body.entity
    hits = await engine.hydration.hits(
        await engine.recall.search(ns, query), documents=body.include.documents,
        related=RELATED_LIMIT if body.include.related else 0,
    )  # fmt: skip
    now = time.time()
    results = [_result(hit, body, now) for hit in hits]
    elapsed = (time.perf_counter() - started) * 1000
    return reply(SearchResponse(results=results, search_time=round(elapsed, 2)))


def _result(hydrated: Hydrated, body: Search, now: float) -> SearchResult:
    result = render.search_result(hydrated.hit, now)
    if not (body.include.related or body.include.documents):
        return result
    included = Included()
    if hydrated.related is not None:
        included.related = render.related(hydrated.related)
    if body.include.documents and hydrated.document is not None:
        included.document = render.included_document(hydrated.document)
    result.included = included
    return result


async def profile(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, Profile) if await request.read() else Profile()
    built = await params.engine(request).profiles.build(
        ns, filter=params.filter_of(body.filter), buckets=body.buckets or [],
        as_of=params.timestamp(body.as_of, "$.asOf"),
    )  # fmt: skip

    def facts(memories: list[Memory]) -> list[Fact]:
        return [Fact(id=m.id, memory=m.text) for m in memories]

    body_out = ProfileBody(
        static=facts(built.static),
        dynamic=facts(built.dynamic),
        buckets={name: facts(found) for name, found in built.buckets.items()},
    )
    if render.prefers_markdown(request.headers.get("Accept", "")):
        return web.Response(
            text=render.profile_markdown(ns, body_out), content_type="text/markdown"
        )
    return reply(ProfileResponse(profile=body_out))


async def list_items(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    kind = request.match_info["type"]
    query = params.query(request, ListQuery)
    page, limit, sort, order = query.page, query.limit, query.sort, query.order
    if sort == "position" and kind != "chunks":
        raise BadRequest("invalid query parameter", "?sort: position sorts chunks only")
    body = await decode(request, ListBody) if await request.read() else ListBody()
    filter = params.filter_of(body.filter)
    engine = params.engine(request)
    out = ListResponse(
        documents=[], chunks=[], memories=[], pagination=render.pagination(page, limit, 0)
    )
    if kind == "documents":
        docs, total = await engine.documents.list_documents(
            ns, page=page, limit=limit, sort=sort, order=order, filter=filter
        )
        counts = (
            await engine.hydration.memory_counts([d.id for d in docs])
            if body.include.memory_count
            else {}
        )
        out.documents = [
            render.document(d, content=body.include.content, memory_count=counts.get(d.id))
            for d in docs
        ]
    elif kind == "chunks":
        chunks, total = await engine.documents.list_chunks(
            ns, page=page, limit=limit, sort=sort, order=order, filter=filter
        )
        out.chunks = [render.chunk(c, with_document=True) for c in chunks]
    else:
        memories, total = await engine.memories.list_memories(
            ns, page=page, limit=limit, sort=sort, order=order, filter=filter,
            include_forgotten=body.include.forgotten, history=body.history, type=body.type,
            status=body.status, document=body.document, entity=body.entity,
        )  # fmt: skip
        now = time.time()
        out.memories = [render.memory(m, now) for m in memories]
    out.pagination = render.pagination(page, limit, total)
    return reply(out)


async def memory_counts(request: web.Request) -> web.Response:
    """How many memories each of the documents named (by smem's id or the caller's) gave; ids
    of no document in the namespace are left out."""
    ns = params.namespace(request)
    body = await decode(request, MemoryCountsRequest)
    counts = await params.engine(request).hydration.memory_counts_by_ref(ns, body.ids)
    return reply(
        MemoryCounts(counts=[MemoryCount(id=ref, memory_count=n) for ref, n in counts.items()])
    )


ROUTES = [
    Route(
        method="POST", path="/ns/{ns}/search", handler=search, namespace_from="path",
        body=Search, reply=SearchResponse,
        summary="Hybrid recall over memories and chunks: vectors and BM25, fused",
        description=(
            "smem's extensions: `asOf` (valid time) and `asOfRecorded` (record time) for time"
            " travel, `halfLifeDays` for recency decay, and `entity` (an entity's id, or its"
            " name in any case) to keep only the memories naming it and the chunks those were"
            " read from. An entity the namespace does not have finds nothing (an empty list,"
            " not an error), as the memory list's `entity` filter does. A retracted document's"
            " chunks are never found until it is unretracted."
        ),
    ),
    Route(
        method="POST", path="/ns/{ns}/profile", handler=profile, namespace_from="path",
        body=Profile, body_optional=True, reply=ProfileResponse,
        summary="Who the memories say the user is (static) and what is going on now (dynamic)",
        description="JSON; markdown (`text/markdown`) when the Accept header prefers it.",
    ),
    Route(
        method="POST", path="/ns/{ns}/list/{type:documents|chunks|memories}", handler=list_items,
        namespace_from="path", body=ListBody, body_optional=True, query=ListQuery,
        reply=ListResponse, summary="A page of documents, chunks or memories, with a filter",
    ),
    Route(
        method="POST", path="/ns/{ns}/list/documents/memory-counts", handler=memory_counts,
        namespace_from="path", body=MemoryCountsRequest, reply=MemoryCounts,
        summary="How many memories each of the named documents gave",
    ),
]  # fmt: skip
