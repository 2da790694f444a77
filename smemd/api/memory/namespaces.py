"""Namespaces (v5 `/ns`, alias `/namespaces`) and the job queue (`/v1/jobs`)."""

from __future__ import annotations

from aiohttp import web

from smemd import log
from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.ids import new_id
from smemd.errors import NotFound
from smemd.http.route import Route
from smemd.protocol.memory import (
    Jobs,
    JobsQuery,
    NamespaceDetails,
    NamespaceList,
    NamespacesQuery,
    System,
    UpdateNamespace,
)
from smemd.protocol.namespaces import DeleteNamespaceQuery, NamespaceDeleted
from smemd.store.records import Namespace


async def list_namespaces(request: web.Request) -> web.Response:
    query = params.query(request, NamespacesQuery)
    rows, total = await params.engine(request).namespaces(
        page=query.page, limit=query.limit, contains=query.q, scope=params.scope(request)
    )
    return reply(
        NamespaceList(
            namespaces=[render.namespace(ns) for ns in rows],
            pagination=render.pagination(query.page, query.limit, total),
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
    changes = params.engine(request).namespace_changes
    return reply(_details(await changes.set_context(name, body.supporting_context)))


async def delete(request: web.Request) -> web.Response:
    name = params.namespace(request)
    query = params.query(request, DeleteNamespaceQuery)
    changes = params.engine(request).namespace_changes
    if query.move_to is None:
        removed = await changes.remove(name)
        return reply(
            NamespaceDeleted(
                status="deleted", namespace=name, deleted_documents_count=removed.documents,
                deleted_memories_count=removed.memories,
            )
        )  # fmt: skip
    target = params.namespace_in_scope(request, query.move_to, "?moveTo")
    moved = await changes.move(name, target)
    log.api.info("namespace %s moved into %s: %d documents, %d memories", name, target,
             moved.documents, moved.memories)  # fmt: skip
    return reply(
        NamespaceDeleted(status="queued", operation_id=new_id("op"), namespace=name, move_to=target)
    )


async def jobs(request: web.Request) -> web.Response:
    query = params.query(request, JobsQuery)
    if query.namespace is not None:
        params.namespace_in_scope(request, query.namespace, "?namespace")
    rows, counts = await params.engine(request).jobs(
        query.limit, query.namespace, scope=params.scope(request)
    )
    return reply(Jobs(jobs=[render.job(j) for j in rows], counts=counts))


ROUTES = [
    Route(
        method="GET", path="/ns", handler=list_namespaces, namespace_from="listing",
        query=NamespacesQuery, reply=NamespaceList, summary="Namespaces with their counts",
    ),
    Route(
        method="GET", path="/namespaces", handler=list_namespaces, namespace_from="listing",
        query=NamespacesQuery, reply=NamespaceList, summary="Namespaces with their counts (alias)",
    ),
    Route(
        method="GET", path="/ns/{ns}", handler=get, namespace_from="path",
        reply=NamespaceDetails, summary="A namespace, its supporting context and counts",
    ),
    Route(
        method="PATCH", path="/ns/{ns}", handler=update, role="write", namespace_from="path",
        body=UpdateNamespace, reply=NamespaceDetails,
        summary="Set a namespace's supporting context; 404 when it does not exist",
    ),
    Route(
        method="DELETE", path="/ns/{ns}", handler=delete, role="write", namespace_from="path",
        query=DeleteNamespaceQuery, reply=NamespaceDeleted,
        summary="Delete a namespace and everything in it, or move everything into `moveTo`",
        description="One transaction: documents, chunks, memories and their versions, relations,"
        " judgements, labels, jobs and buckets go (or move) together, and a crash part-way leaves"
        " all or nothing. A move answers `status: queued` as the SDK expects, but is done when"
        " the reply is sent; documents still being ingested are queued again in the target."
        " 404 for an unknown namespace, 409 when a caller id is used in both.",
    ),
    Route(
        method="GET", path="/v1/jobs", handler=jobs, namespace_from="listing", query=JobsQuery,
        reply=Jobs, summary="Recent ingest jobs and the count in each phase",
    ),
]  # fmt: skip
