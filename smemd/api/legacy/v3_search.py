"""Legacy v3 search (documents, each with its matching chunks) and container-tag settings.

`POST /v3/search` is the v5 search in chunks mode (`chunkThreshold` its threshold, `filters`
translated), its chunks grouped by document, best document first; `limit` counts documents.
Unless `onlyMatchingChunks`, each matching chunk brings its neighbours, marked not relevant.
`/v3/container-tags/{tag}` reads, sets (`entityContext` is the supporting context) and deletes
the tag's namespace, as `GET|PATCH|DELETE /ns/{ns}` do.
"""

from __future__ import annotations

import time
from typing import Literal

from aiohttp import web

from smemd.api import params, render
from smemd.api.legacy import filters, tags
from smemd.api.legacy.v3_reads import metadata_of
from smemd.api.wire import decode, reply
from smemd.engine.recall.hybrid import Hit
from smemd.errors import BadRequest, NotFound
from smemd.http.route import Route
from smemd.protocol.legacy_v3 import (
    V3Chunk,
    V3Search,
    V3SearchReply,
    V3SearchResult,
    V3TagDeleted,
    V3TagDetails,
    V3TagSettings,
)
from smemd.protocol.memory import Search
from smemd.store.records import Chunk, Document, Namespace

CHUNKS_PER_SEARCH = 100  # the v5 limit: chunks fetched to group into `limit` documents


async def search(request: web.Request) -> web.Response:
    started = time.perf_counter()
    body = await decode(request, V3Search)
    if not body.q.strip():
        raise BadRequest("invalid request body", "$.q: must not be blank")
    ns = tags.namespace_of(request, body.container_tag, body.container_tags)
    rerank: Literal["none", "order"] | None = None
    if body.rerank is not None:
        rerank = "order" if body.rerank else "none"
    options = Search(
        query=body.q, search_mode="chunks", limit=CHUNKS_PER_SEARCH,
        threshold=body.chunk_threshold, filter=filters.to_v5(body.filters), rerank=rerank,
        rewrite_query=body.rewrite_query,
    )  # fmt: skip
    engine = params.engine(request)
    hits = await engine.recall.search(ns, params.search_query(engine, body.q, options))
    grouped: dict[str, tuple[Document, list[Hit]]] = {}
    for hit in hits:
        doc = hit.document
        if doc is None or hit.chunk is None:
            continue
        if body.doc_id is not None and body.doc_id not in (doc.id, doc.caller_id):
            continue
        grouped.setdefault(doc.id, (doc, []))[1].append(hit)
    kept = list(grouped.values())[: body.limit]
    # The chunks beside each match, read by position: a document may have thousands.
    beside = {
        doc.id: {
            h.chunk.position + step for h in doc_hits if h.chunk is not None for step in (-1, 1)
        }
        for doc, doc_hits in kept
    }
    chunks = {} if body.only_matching_chunks else await engine.hydration.chunks_at(beside)
    results = [_result(doc, doc_hits, body, chunks.get(doc.id, [])) for doc, doc_hits in kept]
    elapsed = (time.perf_counter() - started) * 1000
    return reply(V3SearchReply(results=results, timing=round(elapsed, 2), total=len(results)))


def _result(
    doc: Document, hits: list[Hit], body: V3Search, neighbours: list[Chunk]
) -> V3SearchResult:
    """`neighbours`: the document's chunks, for those beside the ones that matched."""
    scores = {h.chunk.position: round(h.similarity, 4) for h in hits if h.chunk is not None}
    texts = {h.chunk.position: h.chunk.text for h in hits if h.chunk is not None}
    for c in neighbours:
        if c.position not in texts and {c.position - 1, c.position + 1} & scores.keys():
            texts[c.position] = c.text
    chunks = [
        V3Chunk(content=texts[p], is_relevant=p in scores, position=p, score=scores.get(p, 0.0))
        for p in sorted(texts)
    ]
    return V3SearchResult(
        document_id=doc.id, title=doc.title, type=doc.type, score=max(scores.values()),
        chunks=chunks, metadata=metadata_of(doc), created_at=render.iso(doc.created_at) or "",
        updated_at=render.iso(doc.updated_at) or "",
        content=doc.content if body.include_full_docs else None,
    )  # fmt: skip


def _details(ns: Namespace) -> V3TagDetails:
    return V3TagDetails(
        container_tag=ns.name, entity_context=ns.supporting_context or None,
        created_at=render.iso(ns.created_at), updated_at=render.iso(ns.updated_at) or "",
    )  # fmt: skip


async def get_tag(request: web.Request) -> web.Response:
    name = params.namespace_in_scope(request, request.match_info["tag"], "$.containerTag")
    ns = await params.engine(request).namespace(name)
    if ns is None:
        raise NotFound("container tag not found", f"no container tag {name!r}")
    return reply(_details(ns))


async def set_tag(request: web.Request) -> web.Response:
    name = params.namespace_in_scope(request, request.match_info["tag"], "$.containerTag")
    body = await decode(request, V3TagSettings)
    changes = params.engine(request).namespace_changes
    return reply(_details(await changes.set_context(name, body.entity_context)))


async def delete_tag(request: web.Request) -> web.Response:
    name = params.namespace_in_scope(request, request.match_info["tag"], "$.containerTag")
    removed = await params.engine(request).namespace_changes.remove(name)
    deleted = V3TagDeleted(
        success=True, container_tag=name, deleted_documents_count=removed.documents,
        deleted_memories_count=removed.memories,
    )  # fmt: skip
    return reply(deleted)


ROUTES = [
    Route(
        method="POST", path="/v3/search", handler=search, namespace_from="body", body=V3Search,
        reply=V3SearchReply, deprecated=True,
        summary="Legacy v3: documents by their matching chunks (the v5 search in chunks mode)",
    ),
    Route(
        method="GET", path="/v3/container-tags/{tag}", handler=get_tag, namespace_from="body",
        reply=V3TagDetails, deprecated=True,
        summary="Legacy v3: a container tag's settings (its namespace's supporting context)",
    ),
    Route(
        method="PATCH", path="/v3/container-tags/{tag}", handler=set_tag, role="write",
        namespace_from="body", body=V3TagSettings, reply=V3TagDetails, deprecated=True,
        summary="Legacy v3: set a container tag's entityContext (its namespace's supporting context)",
    ),
    Route(
        method="DELETE", path="/v3/container-tags/{tag}", handler=delete_tag, role="write",
        namespace_from="body", reply=V3TagDeleted, deprecated=True,
        summary="Legacy v3: delete a container tag's namespace and everything in it (DELETE /ns/{ns})",
    ),
]  # fmt: skip
