"""v5 memory routes (get, forget by id or by query) and smem's own: update, history, restore."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.memories import Forgotten
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol.memory import (
    ForgetIds,
    ForgetQuery,
    ForgetResult,
    History,
    IdError,
    Included,
    MemoryDetails,
    MemoryMatch,
    MemoryOut,
    MemoryQuery,
    UpdateMemory,
)


def _forget_result(forgotten: Forgotten) -> ForgetResult:
    return ForgetResult(
        count=forgotten.count,
        errors=[IdError(id=i, error=e) for i, e in forgotten.errors],
        matches=[MemoryMatch(id=m.id, memory=m.text) for m in forgotten.matches],
    )


async def forget(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, ForgetIds)
    memories = params.engine(request).memories
    return reply(
        _forget_result(
            await memories.forget(ns, body.ids, reason=body.reason or "forgotten by request")
        )
    )


async def forget_matching(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, ForgetQuery)
    forgotten = await params.engine(request).memories.forget_matching(
        ns, body.query, dry_run=body.dry_run, threshold=body.threshold, limit=body.limit
    )
    return reply(_forget_result(forgotten))


async def get(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, MemoryQuery)
    include, related_limit = query.include, query.related_limit
    engine = params.engine(request)
    memory = await engine.memories.get(ns, request.match_info["id"])
    fields = {
        f: getattr(render.memory(memory, time.time()), f)
        for f in render.MemoryOut.__struct_fields__
    }
    details = MemoryDetails(**fields)
    if include:
        details.included = Included()
        if "related" in include:
            details.included.related = render.related(
                await engine.hydration.related(memory, related_limit)
            )
        if "documents" in include and memory.document_id is not None:
            doc = await engine.hydration.document_of(memory)
            if doc is not None:
                details.included.document = render.included_document(doc)
    return reply(details)


async def update(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, UpdateMemory)
    if body.memory is None and body.forget_after is None:
        raise BadRequest("nothing to change", "$: send memory, forgetAfter, or both")
    expires_at = params.timestamp(body.forget_after, "$.forgetAfter")
    memories = params.engine(request).memories
    changed = await memories.change(
        ns, request.match_info["id"], text=body.memory, expires_at=expires_at
    )
    return reply(render.memory(changed, time.time()))


async def history(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    chain = await params.engine(request).memories.history(ns, request.match_info["id"])
    now = time.time()
    return reply(History(memories=[render.memory(m, now) for m in chain]))


async def restore(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    memory = await params.engine(request).memories.restore(ns, request.match_info["id"])
    return reply(render.memory(memory, time.time()))


ROUTES = [
    Route(
        method="DELETE", path="/ns/{ns}/memories", handler=forget, role="write",
        namespace_from="path", body=ForgetIds, reply=ForgetResult,
        summary="Forget memories by id: soft, kept for audit, out of recall",
    ),
    Route(
        method="DELETE", path="/ns/{ns}/memories/semantic", handler=forget_matching,
        role="write", namespace_from="path", body=ForgetQuery, reply=ForgetResult,
        summary="Forget the memories a query selects (or, with dryRun, show them)",
    ),
    Route(
        method="GET", path="/ns/{ns}/memories/{id}", handler=get, namespace_from="path",
        query=MemoryQuery, reply=MemoryDetails,
        summary="A memory, with its relations and document on request",
    ),
    Route(
        method="PATCH", path="/ns/{ns}/memories/{id}", handler=update, role="write",
        namespace_from="path", body=UpdateMemory, reply=MemoryOut,
        summary="New text for a memory (a new version), an expiry, or both",
    ),
    Route(
        method="GET", path="/ns/{ns}/memories/{id}/history", handler=history,
        namespace_from="path", reply=History, summary="Every version of a memory, oldest first",
    ),
    Route(
        method="POST", path="/ns/{ns}/memories/{id}/restore", handler=restore, role="write",
        namespace_from="path", reply=MemoryOut, summary="Undo a forget",
    ),
]  # fmt: skip
