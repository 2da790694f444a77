"""v5 recall routes: search, profile, and the three lists."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.route import Route
from smemd.api.wire import decode, reply
from smemd.engine.recall.hybrid import Hit
from smemd.errors import BadRequest
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
    hits = await engine.recall.search(ns, query)
    now = time.time()
    results = [await _result(request, hit, body, now) for hit in hits]
    elapsed = (time.perf_counter() - started) * 1000
    return reply(SearchResponse(results=results, search_time=round(elapsed, 2)))


async def _result(request: web.Request, hit: Hit, body: Search, now: float) -> SearchResult:
    result = render.search_result(hit, now)
    if not (body.include.related or body.include.documents):
        return result
    engine = params.engine(request)
    included = Included()
    if body.include.related and hit.memory is not None:
        included.related = render.related(await engine.memories.related(hit.memory, RELATED_LIMIT))
    if body.include.documents:
        document = hit.document
        if document is None and hit.memory is not None and hit.memory.document_id is not None:
            async with engine.store.read() as reader:
                document = await reader.document_by_id(hit.memory.document_id)
        if document is not None:
            included.document = render.included_document(document)
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
            await _memory_counts(request, [d.id for d in docs]) if body.include.memory_count else {}
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
    async with params.engine(request).store.read() as reader:
        found = {ref: doc.id for ref in body.ids if (doc := await reader.document(ns, ref))}
    counts = await _memory_counts(request, list(found.values()))
    return reply(
        MemoryCounts(
            counts=[MemoryCount(id=ref, memory_count=counts[d]) for ref, d in found.items()]
        )
    )


async def _memory_counts(request: web.Request, document_ids: list[str]) -> dict[str, int]:
    engine = params.engine(request)
    async with engine.store.read() as reader:
        return {d: len(await reader.memories_of_document(d)) for d in document_ids}


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
