"""v5 document routes: add, batch add, get, update, delete."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.engine.core import Engine
from smemd.engine.ingest.documents import DocumentChange, NewDocument
from smemd.errors import STORE_CANNOT_WRITE, SmemError
from smemd.http.route import Route
from smemd.protocol.memory import (
    AddDocument,
    BatchAdd,
    BatchAddResult,
    BatchDocument,
    BatchResult,
    DeleteIds,
    DeleteResult,
    DocumentOut,
    DocumentQuery,
    DocumentRef,
    IdError,
    Metadata,
    UpdateDocument,
)
from smemd.store.records import Document


def _metadata(metadata: Metadata | None, group: Metadata | None) -> dict[str, object]:
    # `group` isolates related context inside a namespace: it is filterable metadata too.
    return {**(metadata or {}), **(group or {})}


def new_document(
    body: AddDocument | BatchDocument, task_type: str | None, path: str,
    dreaming: str | None = None,
) -> NewDocument:  # fmt: skip
    return NewDocument(
        content=body.content,
        caller_id=body.id,
        metadata=_metadata(body.metadata, body.group),
        date=params.timestamp(body.date, f"{path}.date"),
        task_type="superrag" if task_type == "superrag" else "memory",
        instant=dreaming == "instant",
    )


async def add(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, AddDocument)
    new = new_document(body, body.task_type, "$", body.dreaming)
    doc = await params.engine(request).documents.add(ns, new)
    return reply(render.document_ref(doc))


async def add_batch(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, BatchAdd)
    items = [
        Pending(
            ns,
            partial(new_document, item, body.task_type, f"$.documents[{i}]", body.dreaming),
            item.id,
        )
        for i, item in enumerate(body.documents)
    ]
    accepted, failed = await add_all(params.engine(request), items)
    return reply(BatchAddResult(results=accepted + failed, count=len(accepted), failed=len(failed)))


class Pending(NamedTuple):
    """One document of a batch: its namespace, how to make it (which may fail: a bad date
    fails that document only), and the caller's id to name it by if it does."""

    namespace: str
    make: Callable[[], NewDocument]
    caller_id: str | None


async def add_all(
    engine: Engine, items: Sequence[Pending]
) -> tuple[list[BatchResult], list[BatchResult]]:
    """Add each document: the accepted, in order, and the refused. Those that can be made are
    written in one commit; when the store refuses one of them there, each is tried on its own,
    so that only that one is refused."""
    failed: list[BatchResult] = []
    made: list[tuple[Pending, NewDocument]] = []
    for item in items:
        try:
            new = item.make()
            await engine.documents.check_size(new.content)
        except SmemError as err:
            failed.append(_refused(item.caller_id, err))
            continue
        made.append((item, new))
    try:
        docs = await engine.documents.add_many([(item.namespace, new) for item, new in made])
    except STORE_CANNOT_WRITE:
        raise  # nothing was written: the whole batch is refused, as the error says
    except SmemError:
        accepted, refused = await _one_by_one(engine, made)
        return accepted, failed + refused
    return [_accepted(doc) for doc in docs], failed


async def _one_by_one(
    engine: Engine, made: Sequence[tuple[Pending, NewDocument]]
) -> tuple[list[BatchResult], list[BatchResult]]:
    """Each document its own commit: the accepted, and those refused with their reasons."""
    accepted: list[BatchResult] = []
    failed: list[BatchResult] = []
    for i, (item, new) in enumerate(made):
        try:
            # Its size was checked when it was made: added as a batch of one.
            [doc] = await engine.documents.add_many([(item.namespace, new)])
        except STORE_CANNOT_WRITE as err:
            # Say which were stored, and that the rest were not.
            if not accepted:
                raise
            failed += [_refused(rest.caller_id, err) for rest, _ in made[i:]]
            break
        except SmemError as err:
            failed.append(_refused(item.caller_id, err))
            continue
        accepted.append(_accepted(doc))
    return accepted, failed


def _accepted(doc: Document) -> BatchResult:
    return BatchResult(id=doc.id, status=render.STATUS[doc.status], url=doc.url)


def _refused(caller_id: str | None, err: SmemError) -> BatchResult:
    return BatchResult(id=caller_id or "", status="error", error=err.message, details=err.details)


async def get(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    include = params.query(request, DocumentQuery).include
    engine = params.engine(request)
    doc = await engine.documents.get(ns, request.match_info["id"])
    out = render.document(doc)
    if "chunks" in include:
        out.chunks = [
            render.chunk(c, doc.metadata) for c in await engine.documents.chunks_of(doc.id)
        ]
    if "memories" in include:
        derived = await engine.hydration.memories_of(doc.id)
        now = params.now()
        out.memories = [render.memory(m, now) for m in derived]
    return reply(out)


async def update(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, UpdateDocument)
    metadata = _metadata(body.metadata, body.group) if body.metadata or body.group else None
    change = DocumentChange(
        content=body.content,
        metadata=metadata,
        date=params.timestamp(body.date, "$.date"),
        task_type=body.task_type,
    )
    doc = await params.engine(request).documents.update(ns, request.match_info["id"], change)
    return reply(render.document_ref(doc))


async def delete(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, DeleteIds)
    count, errors = await params.engine(request).documents.delete(ns, body.ids)
    return reply(DeleteResult(count=count, errors=[IdError(id=i, error=e) for i, e in errors]))


ROUTES = [
    Route(
        method="POST", path="/ns/{ns}/document", handler=add, role="write", namespace_from="path",
        body=AddDocument, reply=DocumentRef,
        summary="Add a document; it is stored with its ingest job before the reply",
    ),
    Route(
        method="POST", path="/ns/{ns}/document/batch", handler=add_batch, role="write",
        namespace_from="path", body=BatchAdd, reply=BatchAddResult,
        summary="Add up to 600 documents; the reply says which were accepted",
    ),
    Route(
        method="GET", path="/ns/{ns}/document/{id}", handler=get, namespace_from="path",
        query=DocumentQuery, reply=DocumentOut,
        summary="A document by smem's id or yours, with its chunks and memories on request",
    ),
    Route(
        method="PATCH", path="/ns/{ns}/document/{id}", handler=update, role="write",
        namespace_from="path", body=UpdateDocument, reply=DocumentRef,
        summary="Change a document; new content is a new revision, ingested again",
    ),
    Route(
        method="DELETE", path="/ns/{ns}/document", handler=delete, role="write",
        namespace_from="path", body=DeleteIds, reply=DeleteResult,
        summary="Hard-delete documents, their chunks and the memories only they support",
    ),
]  # fmt: skip
