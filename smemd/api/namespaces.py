"""Namespaces (v5 `/ns`, alias `/namespaces`) and the job queue (`/v1/jobs`)."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.ids import now
from smemd.errors import NotFound
from smemd.protocol.memory import Jobs, NamespaceDetails, NamespaceList, System, UpdateNamespace
from smemd.store.records import Namespace


async def list_namespaces(request: web.Request) -> web.Response:
    page = params.query_int(request, "page", 1, 1, 1_000_000)
    limit = params.query_int(request, "limit", 10, 1, 100)
    rows, total = await params.engine(request).namespaces(
        page=page, limit=limit, contains=request.query.get("q", "")
    )
    return reply(
        NamespaceList(
            namespaces=[render.namespace(ns) for ns in rows],
            pagination=render.pagination(page, limit, total),
        )
    )


def _details(ns: Namespace) -> NamespaceDetails:
    return NamespaceDetails(
        namespace=ns.name,
        supporting_context=ns.supporting_context or None,
        document_count=ns.document_count,
        memory_count=ns.memory_count,
        system=System(created_at=render.iso(ns.created_at), updated_at=render.iso(ns.updated_at)),
    )


async def get(request: web.Request) -> web.Response:
    name = params.namespace(request)
    ns = await params.engine(request).namespace(name)
    if ns is None:
        raise NotFound("namespace not found", f"no namespace {name!r}")
    return reply(_details(ns))


async def update(request: web.Request) -> web.Response:
    name = params.namespace(request)
    body = await decode(request, UpdateNamespace)
    engine = params.engine(request)
    async with engine.store.write() as writer:
        await writer.ensure_namespace(name, now())
        if body.supporting_context is not None:
            await writer.set_supporting_context(name, body.supporting_context, now())
    ns = await engine.namespace(name)
    assert ns is not None
    return reply(_details(ns))


async def jobs(request: web.Request) -> web.Response:
    limit = params.query_int(request, "limit", 50, 1, 1000)
    ns = request.query.get("namespace")
    rows, counts = await params.engine(request).jobs(limit, ns)
    return reply(Jobs(jobs=[render.job(j) for j in rows], counts=counts))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/ns", list_namespaces)
    router.add_get("/namespaces", list_namespaces)
    router.add_get("/ns/{ns}", get)
    router.add_patch("/ns/{ns}", update)
    router.add_get("/v1/jobs", jobs)
