"""`/v4/memories`: v4's hand-written memories, as the v5 engine calls.

POST stores the memories as one document, a line each, and answers once its job has made them
(within the request's deadline); each memory keeps the `isStatic` and metadata it was sent with.
PATCH is the v5 memory update (a new version), DELETE the v5 forget, and `forget-matching` the
v5 forget by query (or by ids). A memory is named by `id`, or by `content`: the newest latest
version with exactly that text in the container tag's namespace.
"""

from __future__ import annotations

import asyncio

import msgspec
from aiohttp import web

from smemd.api import params, render
from smemd.api.legacy import tags
from smemd.api.wire import decode, reply
from smemd.engine.core import Engine
from smemd.engine.ids import new_id
from smemd.engine.ingest.documents import NewDocument
from smemd.errors import BadRequest, Unavailable
from smemd.http.route import Route
from smemd.protocol.legacy_v4 import (
    V4AddedMemory,
    V4AddMemories,
    V4AddMemoriesResponse,
    V4Candidate,
    V4ForgetMatching,
    V4ForgetMatchingResponse,
    V4ForgetMemory,
    V4Forgot,
    V4NewMemory,
    V4UpdatedMemory,
    V4UpdateMemory,
)
from smemd.store import deadline
from smemd.store.records import Document, Memory

POLL_S = 0.05


async def add(request: web.Request) -> web.Response:
    body = await decode(request, V4AddMemories)
    ns = tags.namespace_of(request, body.container_tag)
    engine = params.engine(request)
    metadata: dict[str, object] = {tags.TAGS_KEY: tags.all_tags(body.container_tag, None)}
    # Worked before the queue: the memories must exist when this answers.
    new = NewDocument(
        content="\n".join(m.content for m in body.memories), metadata=metadata, instant=True
    )
    doc = await deadline.waiting(_settled(engine, ns, (await engine.documents.add(ns, new)).id))
    if doc.status == "failed":
        raise Unavailable("the memories could not be stored", doc.error or "ingest failed")
    made = await engine.hydration.memories_of(doc.id)
    marks = {}
    for m in made:
        said = _said(m, body.memories)
        if said is not None and (said.is_static or said.metadata):
            marks[m.id] = (said.is_static or m.is_static, {**m.metadata, **(said.metadata or {})})
    if marks:
        marked = {m.id: m for m in await engine.memories.mark(ns, marks)}
        made = [marked.get(m.id, m) for m in made]
    return reply(
        V4AddMemoriesResponse(
            document_id=doc.id,
            memories=[
                V4AddedMemory(
                    id=m.id,
                    memory=m.text,
                    is_static=m.is_static,
                    created_at=render.iso(m.created_at) or "",
                )
                for m in made
            ],
        )
    )


async def _settled(engine: Engine, ns: str, document_id: str) -> Document:
    """The document once its job is done or failed."""
    while True:
        doc = await engine.documents.get(ns, document_id)
        if doc.status in ("done", "failed"):
            return doc
        await asyncio.sleep(POLL_S)


def _said(m: Memory, memories: list[V4NewMemory]) -> V4NewMemory | None:
    """The memory sent that `m` was read from: the same text, else the line holding it."""
    for exact in (True, False):
        for said in memories:
            text = said.content.strip()
            if (m.text == text) if exact else (m.text in text):
                return said
    return None


async def update(request: web.Request) -> web.Response:
    body = await decode(request, V4UpdateMemory)
    ns = tags.namespace_of(request, body.container_tag)
    engine = params.engine(request)
    after = body.forget_after
    keeps_expiry = isinstance(after, msgspec.UnsetType)
    expires_at = (
        None if isinstance(after, msgspec.UnsetType) else params.timestamp(after, "$.forgetAfter")
    )
    old = await _named(engine, ns, body.id, body.content)
    if keeps_expiry:
        expires_at = old.expires_at
    metadata = None
    if body.metadata is not None or body.temporal_context is not None:
        metadata = dict(old.metadata if body.metadata is None else body.metadata)
        if body.temporal_context is not None:
            told = msgspec.to_builtins(body.temporal_context)
            metadata["temporalContext"] = {k: v for k, v in told.items() if v is not None}
    new = await engine.memories.change(
        ns, old.id, text=body.new_content, expires_at=expires_at, metadata=metadata
    )
    return reply(
        V4UpdatedMemory(
            id=new.id,
            memory=new.text,
            version=new.version,
            parent_memory_id=new.parent_id,
            root_memory_id=new.root_id,
            created_at=render.iso(new.created_at) or "",
            metadata=new.metadata or None,
            forget_after=render.iso(new.expires_at),
            forget_reason=None,
        )
    )


async def forget(request: web.Request) -> web.Response:
    body = await decode(request, V4ForgetMemory)
    ns = tags.namespace_of(request, body.container_tag)
    engine = params.engine(request)
    memory = await _named(engine, ns, body.id, body.content)
    await engine.memories.forget(ns, [memory.id], reason=body.reason or "forgotten by request")
    return reply(V4Forgot(id=memory.id, forgotten=True))


async def forget_matching(request: web.Request) -> web.Response:
    body = await decode(request, V4ForgetMatching)
    ns = tags.namespace_of(request, body.container_tag)
    if (body.query is None) == (body.ids is None):
        raise BadRequest("invalid request body", "$: send query or ids, one of them")
    engine = params.engine(request)
    memories = engine.memories
    if body.query is not None:
        if not body.query.strip():
            raise BadRequest("invalid request body", "$.query: must not be blank")
        done = await memories.forget_matching(
            ns, body.query, dry_run=body.dry_run, threshold=body.threshold,
            limit=body.max_forget, reason=body.reason,
        )  # fmt: skip
        chosen, scores = done.matches, done.scores
    else:
        ids = list(dict.fromkeys(body.ids or []))[: body.max_forget]
        chosen = await engine.hydration.memories_in(ns, ids)
        scores = {m.id: 1.0 for m in chosen}
        if not body.dry_run:
            reason = body.reason or "forgotten by request"
            chosen = (await memories.forget(ns, [m.id for m in chosen], reason=reason)).matches
    listed = [
        V4Candidate(id=m.id, memory=m.text, score=round(scores.get(m.id, 1.0), 4)) for m in chosen
    ]
    verb = "would be forgotten" if body.dry_run else "forgotten"
    out = V4ForgetMatchingResponse(
        dry_run=body.dry_run, count=len(listed), summary=f"{len(listed)} memories {verb}",
        forget_batch_id=None if body.dry_run else new_id("forget"),
    )  # fmt: skip
    if body.dry_run:
        out.candidates = listed
    else:
        out.forgotten = listed
    return reply(out)


async def _named(engine: Engine, ns: str, memory_id: str | None, content: str | None) -> Memory:
    if memory_id is not None:
        return await engine.memories.get(ns, memory_id)
    if content is not None:
        return await engine.memories.by_text(ns, content)
    raise BadRequest("invalid request body", "$: send id or content to name the memory")


ROUTES = [
    Route(
        method="POST", path="/v4/memories", handler=add, role="write", namespace_from="body",
        body=V4AddMemories, reply=V4AddMemoriesResponse, deprecated=True,
        summary="Legacy v4: add memories (one document, a line each), answered once stored",
    ),
    Route(
        method="PATCH", path="/v4/memories", handler=update, role="write", namespace_from="body",
        body=V4UpdateMemory, reply=V4UpdatedMemory, deprecated=True,
        summary="Legacy v4: new text for a memory named by id or content (a new version)",
    ),
    Route(
        method="DELETE", path="/v4/memories", handler=forget, role="write",
        namespace_from="body", body=V4ForgetMemory, reply=V4Forgot, deprecated=True,
        summary="Legacy v4: forget a memory named by id or content",
    ),
    Route(
        method="POST", path="/v4/memories/forget-matching", handler=forget_matching,
        role="write", namespace_from="body", body=V4ForgetMatching,
        reply=V4ForgetMatchingResponse, deprecated=True,
        summary="Legacy v4: forget the memories a query or a list of ids selects (or preview)",
    ),
]  # fmt: skip
