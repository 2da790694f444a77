"""`POST /v4/search`: v4's memory search, translated to the v5 recall the `/ns/{ns}/search`
route makes, and its hits rendered in v4's shape.

`searchMode` memories | hybrid | documents is v5's memories | hybrid | chunks. `include.chunks`
puts under each memory the chunk it was read from (a chunk found on its own as well is then
not repeated beside it); `include.relatedMemories` adds its versions and links as `context`;
`include.documents` / `summaries` its document. `rerank` / `aggregate` are v5's "order" /
"aggregate"; left out, smem's default holds.

Each result's metadata says when, as Supermemory's does: `temporalContext.documentDate`, the
date of the document it was read from, and `eventDate`, the date of the event a memory tells,
when known (a client's own `temporalContext`, set through `PATCH /v4/memories`, is kept as it
is). memorybench's Supermemory provider gives its answering model the dates from there alone.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from aiohttp import web

from smemd.api import params, render
from smemd.api.legacy import tags
from smemd.api.legacy.filters import legacy_filter
from smemd.api.wire import decode, reply
from smemd.engine.filters import Filter
from smemd.engine.hydration import Hydrated
from smemd.engine.memories import Related
from smemd.engine.recall.hybrid import Hit
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol.legacy_v4 import (
    V4Chunk,
    V4Context,
    V4Document,
    V4Related,
    V4Result,
    V4Search,
    V4SearchResponse,
)
from smemd.protocol.memory import Search, SearchInclude, SearchMode
from smemd.store.records import Chunk, Document, Memory

Rerank = Literal["none", "order", "aggregate"]
MODES: dict[str, SearchMode] = {"memories": "memories", "hybrid": "hybrid", "documents": "chunks"}
RERANK: dict[bool | None, Rerank | None] = {None: None, True: "order", False: "none"}
RELATED_LIMIT = 5


async def search(request: web.Request) -> web.Response:
    body = await decode(request, V4Search)
    ns = tags.namespace_of(request, body.container_tag, body.container_tags)
    return reply(await run(request, ns, body))


async def run(request: web.Request, ns: str, body: V4Search) -> V4SearchResponse:
    """The v4 search `body` asks for in namespace `ns` (also `/v4/profile`'s `searchResults`)."""
    started = time.perf_counter()
    if not body.q.strip():
        raise BadRequest("invalid request body", "$.q: must not be blank")
    engine = params.engine(request)
    translated = legacy_filter(body.filters, "$.filters") if body.filters is not None else None
    embeds = body.include.chunks and body.search_mode != "documents"
    rerank: Rerank | None = "aggregate" if body.aggregate else RERANK[body.rerank]
    v5 = Search(
        query=body.q, search_mode=MODES[body.search_mode],
        limit=body.limit, threshold=body.threshold,
        filter=None if isinstance(translated, Filter) else translated, rerank=rerank,
        include=SearchInclude(forgotten=body.include.forgotten_memories),
    )  # fmt: skip
    query = params.search_query(engine, body.q, v5, include_forgotten=v5.include.forgotten)
    if isinstance(translated, Filter):
        query.filter = translated
    hits = await engine.hydration.hits(
        # A memory's source says when it was said, if its chat log stated it (`_dated`).
        await engine.recall.search(ns, query), documents=True, sources=True,
        related=RELATED_LIMIT if body.include.related_memories else 0,
    )  # fmt: skip
    results = _render(hits, body, embeds)
    elapsed = (time.perf_counter() - started) * 1000
    return V4SearchResponse(results=results, timing=round(elapsed, 2), total=len(results))


def _render(hits: list[Hydrated], body: V4Search, embeds: bool) -> list[V4Result]:
    ranked_chunks = {h.hit.chunk.id: h.hit.similarity for h in hits if h.hit.chunk is not None}
    results: list[V4Result] = []
    for hydrated in hits:
        hit = hydrated.hit
        if hit.memory is not None:
            m = hit.memory
            said = hydrated.source.said_at if hydrated.source is not None else None
            result = _memory(hit, m, hydrated.document, said)
            if embeds:
                source = hydrated.source
                score = ranked_chunks.get(m.chunk_id or "", hit.similarity)
                result.chunks = [_chunk(source, round(score, 4))] if source is not None else []
            if hydrated.related is not None:
                result.context = _context(m, hydrated.related)
        else:
            # A chunk ranked in its own right keeps its place, even when it is also shown
            # under a memory read from it: the ranking is v5's, result for result.
            assert hit.chunk is not None
            result = _chunk_result(hit)
            result.metadata = _dated(result.metadata, hit.document, None, hit.chunk.said_at)
        document = hydrated.document
        if (body.include.documents or body.include.summaries) and document is not None:
            result.documents = [_document(document, body.include.documents)]
        results.append(result)
    return results


def _memory(hit: Hit, m: Memory, document: Document | None, said_at: float | None) -> V4Result:
    return V4Result(
        id=m.id, memory=m.text, similarity=round(hit.similarity, 4),
        updated_at=render.iso(m.updated_at) or "", metadata=_dated(m.metadata, document, m, said_at),
        version=m.version, root_memory_id=m.root_id if m.root_id != m.id else None,
    )  # fmt: skip


def _dated(
    metadata: dict[str, Any], document: Document | None, memory: Memory | None,
    said_at: float | None,
) -> dict[str, Any]:  # fmt: skip
    """`metadata` with its `temporalContext`: when it was said (`documentDate`: its chat log's
    message's time, `said_at`, else its document's date), and the memory's event's. A client
    reads relative dates ("today") against documentDate, as memorybench's answering prompt does:
    a message of a history sent as one document was said on its own day."""
    if "temporalContext" in metadata:
        return metadata
    told: dict[str, Any] = {}
    said = said_at if said_at is not None else document.content_date if document else None
    if said is not None:
        told["documentDate"] = render.iso(said)
    if memory is not None and memory.event_at is not None:
        told["eventDate"] = [render.iso(memory.event_at)]
    return {**metadata, "temporalContext": told} if told else metadata


def _chunk_result(hit: Hit) -> V4Result:
    assert hit.chunk is not None
    c, doc = hit.chunk, hit.document
    return V4Result(
        id=c.id, chunk=c.text, similarity=round(hit.similarity, 4),
        updated_at=render.iso(doc.updated_at if doc else c.created_at) or "",
        metadata=doc.metadata if doc else {},
    )  # fmt: skip


def _chunk(c: Chunk, score: float) -> V4Chunk:
    return V4Chunk(content=c.text, document_id=c.document_id, position=c.position, score=score)


def _document(doc: Document, full: bool) -> V4Document:
    """`full` (include.documents): title, type and metadata too; smem keeps no summaries."""
    out = V4Document(
        id=doc.id, created_at=render.iso(doc.created_at) or "",
        updated_at=render.iso(doc.updated_at) or "",
    )  # fmt: skip
    if full:
        out.title, out.type, out.metadata = doc.title, doc.type, doc.metadata
    return out


def _context(m: Memory, related: Related) -> V4Related:
    def one(other: Memory, relation: str, distance: int | None) -> V4Context:
        return V4Context(
            memory=other.text, relation=relation, updated_at=render.iso(other.updated_at) or "",
            metadata=other.metadata, version=distance,
        )  # fmt: skip

    return V4Related(
        parents=[one(p, "updates", p.version - m.version) for p in related.parents],
        children=[one(c, "updates", c.version - m.version) for c in related.children],
        related=[one(s, kind, None) for s, kind in related.siblings if kind in ("extends", "derives")],
    )  # fmt: skip


ROUTES = [
    Route(
        method="POST", path="/v4/search", handler=search, namespace_from="body", body=V4Search,
        reply=V4SearchResponse, deprecated=True,
        summary="Legacy v4 memory search (containerTag, q): v5 recall in v4's shape",
    ),
]  # fmt: skip
