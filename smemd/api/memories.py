"""v5 memory routes (get, forget by id or by query) and smem's own: update, history, restore."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.memories import Forgotten
from smemd.errors import BadRequest
from smemd.protocol.memory import (
    ForgetIds,
    ForgetQuery,
    ForgetResult,
    History,
    IdError,
    Included,
    MemoryDetails,
    MemoryMatch,
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
    include = params.query_list(request, "include", ("related", "documents"))
    related_limit = params.query_int(request, "relatedLimit", 5, 1, 100)
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
                await engine.memories.related(memory, related_limit)
            )
        if "documents" in include and memory.document_id is not None:
            async with engine.store.read() as reader:
                doc = await reader.document_by_id(memory.document_id)
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
    memory_id = request.match_info["id"]
    if body.memory is not None:
        memory_id = (await memories.update(ns, memory_id, body.memory)).id
    if expires_at is not None:
        await memories.expire(ns, memory_id, expires_at)
    return reply(render.memory(await memories.get(ns, memory_id), time.time()))


async def history(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    chain = await params.engine(request).memories.history(ns, request.match_info["id"])
    now = time.time()
    return reply(History(memories=[render.memory(m, now) for m in chain]))


async def restore(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    memory = await params.engine(request).memories.restore(ns, request.match_info["id"])
    return reply(render.memory(memory, time.time()))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_delete("/ns/{ns}/memories", forget)
    router.add_delete("/ns/{ns}/memories/semantic", forget_matching)
    router.add_get("/ns/{ns}/memories/{id}", get)
    router.add_patch("/ns/{ns}/memories/{id}", update)
    router.add_get("/ns/{ns}/memories/{id}/history", history)
    router.add_post("/ns/{ns}/memories/{id}/restore", restore)
