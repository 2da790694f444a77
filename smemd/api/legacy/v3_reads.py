"""Legacy v3 document reads: get (also as `GET /v3/memories/{id}`, which the old TypeScript SDK
polls with a document's id), list (whose reply calls its documents `memories`), and the queue
of documents still being processed. A document's container tags are shown beside its metadata
rather than in it (see `tags`).
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from smemd.api import params, render
from smemd.api.legacy import filters, tags
from smemd.api.legacy.v3_changes import find
from smemd.api.wire import decode, reply
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol.legacy_v3 import (
    Count,
    V3Document,
    V3Item,
    V3List,
    V3ListReply,
    V3Memory,
    V3ProcessingQuery,
    V3ProcessingReply,
)
from smemd.store.records import Document, Memory

ACTIVE_S = 4 * 3600  # `view=active`: documents changed within the last four hours


def tags_of(doc: Document) -> list[str]:
    kept = doc.metadata.get(tags.TAGS_KEY)
    if isinstance(kept, list) and all(isinstance(t, str) for t in kept):
        return kept
    return [doc.namespace]  # written through v5: its namespace is its one tag


def metadata_of(doc: Document) -> dict[str, Any]:
    return {k: v for k, v in doc.metadata.items() if k != tags.TAGS_KEY}


def item(doc: Document, *, content: bool = False) -> V3Item:
    return V3Item(
        id=doc.id, custom_id=doc.caller_id, status=render.STATUS[doc.status], title=doc.title,
        summary=None, type=doc.type, metadata=metadata_of(doc), container_tags=tags_of(doc),
        created_at=render.iso(doc.created_at) or "", updated_at=render.iso(doc.updated_at) or "",
        content=doc.content if content else None, url=doc.url,
    )  # fmt: skip


def _memory(m: Memory, sources: int, now: float) -> V3Memory:
    return V3Memory(
        id=m.id, memory=m.text, is_static=m.is_static, is_latest=m.is_latest,
        is_inference=m.is_inference, is_forgotten=m.is_forgotten(now), version=m.version,
        source_count=max(sources, 1), parent_memory_id=m.parent_id, root_memory_id=m.root_id,
        created_at=render.iso(m.created_at) or "", updated_at=render.iso(m.updated_at) or "",
        metadata=m.metadata,
    )  # fmt: skip


async def get(request: web.Request) -> web.Response:
    doc = await find(request)
    engine = params.engine(request)
    derived = await engine.hydration.memories_with_sources(doc.id)
    now = time.time()
    status = render.STATUS[doc.status]
    out = V3Document(
            id=doc.id,
            custom_id=doc.caller_id,
            content=doc.content,
            title=doc.title,
            summary=None,
            type=doc.type,
            status=status,
            task_type=doc.task_type,
            latest_revision=doc.revision,
            dreaming_status="done" if status in ("done", "failed") else "dreaming",
            metadata=metadata_of(doc),
            container_tags=tags_of(doc),
            created_at=render.iso(doc.created_at) or "",
            updated_at=render.iso(doc.updated_at) or "",
            raw=None,
            source=None,
            connection_id=None,
            url=doc.url,
            # SDK 3: "omitted when the document has no memories (e.g. still processing)"
            memories=[_memory(m, n, now) for m, n in derived] or None,
        )  # fmt: skip
    return reply(out)


def _count(value: Count, path: str) -> int:
    """`page` or `limit` sent as a number or a numeric string: a whole number, 1 to 100 (limit)."""
    try:
        number = float(value) if isinstance(value, str) else value
        whole = int(number)
    except (ValueError, OverflowError):
        raise BadRequest("invalid request body", f"{path}: expected a whole number") from None
    top = 100 if path.endswith("limit") else 1_000_000
    if whole != number or not 1 <= whole <= top:
        raise BadRequest("invalid request body", f"{path}: expected a whole number 1 to {top}")
    return whole


async def list_documents(request: web.Request) -> web.Response:
    body = await decode(request, V3List) if await request.read() else V3List()
    ns = tags.namespace_of(request, None, body.container_tags)
    page, limit = _count(body.page, "$.page"), _count(body.limit, "$.limit")
    docs, total = await params.engine(request).documents.list_documents(
        ns, page=page, limit=limit, sort=body.sort, order=body.order,
        filter=filters.to_filter(body.filters),
    )  # fmt: skip
    return reply(
        V3ListReply(
            memories=[item(d, content=body.include_content) for d in docs],
            pagination=render.pagination(page, limit, total),
        )
    )


async def processing(request: web.Request) -> web.Response:
    query = params.query(request, V3ProcessingQuery)
    named = [t.strip() for t in (query.container_tags or "").split(",") if t.strip()]
    # No tag: every namespace the caller may see (the old API's whole account).
    ns = tags.namespace_of(request, None, named, path="?") if named else None
    docs, total = await params.engine(request).documents.list_unfinished(
        params.scope(request), ns, include_failed=query.view == "all", page=query.page, limit=query.limit,
        since=time.time() - ACTIVE_S if query.view == "active" else None,
    )  # fmt: skip
    out = V3ProcessingReply(
        documents=[item(d) for d in docs], total_count=total,
        pagination=render.pagination(query.page, query.limit, total),
    )  # fmt: skip
    return reply(out)


ROUTES = [
    Route(
        method="POST", path="/v3/documents/list", handler=list_documents, namespace_from="body",
        body=V3List, body_optional=True, reply=V3ListReply, deprecated=True,
        summary="Legacy v3: a page of documents (under the key `memories`), with a legacy filter",
    ),
    Route(
        method="GET", path="/v3/documents/processing", handler=processing,
        namespace_from="listing", query=V3ProcessingQuery, reply=V3ProcessingReply,
        deprecated=True, summary="Legacy v3: documents still being processed",
    ),
    Route(
        method="GET", path="/v3/documents/{id}", handler=get, namespace_from="subject",
        reply=V3Document, deprecated=True,
        summary="Legacy v3: a document by id or customId, with its memories",
    ),
    Route(
        method="GET", path="/v3/memories/{id}", handler=get, namespace_from="subject",
        reply=V3Document, deprecated=True,
        summary="Legacy v3: a document by id or customId (the old TypeScript SDK's memories.get)",
    ),
]  # fmt: skip
