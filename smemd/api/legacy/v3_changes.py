"""Legacy v3 document changes: update, delete, and bulk delete.

They name a document by id or customId alone, so it is looked for in every namespace the
caller may see; outside them it is a 404, as a missing one. Container tags a PATCH names are
recorded on the document (see `tags`); it stays in the namespace it was written to.
"""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.legacy import tags
from smemd.api.legacy.v3_documents import ref
from smemd.api.wire import decode, reply
from smemd.engine.ingest.documents import DocumentChange
from smemd.errors import BadRequest, NotFound
from smemd.http.route import Route
from smemd.protocol.legacy_v3 import V3BulkDelete, V3BulkDeleted, V3IdError, V3Ref, V3Update
from smemd.store.records import Document


async def find(request: web.Request) -> Document:
    """The document the path's id (or customId) names, in any of the caller's namespaces."""
    engine = params.engine(request)
    return await engine.documents.find(request.match_info["id"], params.scope(request))


async def update(request: web.Request) -> web.Response:
    body = await decode(request, V3Update)
    doc = await find(request)
    metadata = None
    retag = bool(body.container_tag or body.container_tags)
    if retag:  # recorded: the document stays in its namespace
        for i, tag in enumerate(tags.all_tags(body.container_tag, body.container_tags)):
            params.namespace_named(tag, f"$.containerTags[{i}]")
        retagged = tags.kept_tags(request, body.container_tag, body.container_tags)
    if body.metadata is not None or body.filter_by_metadata is not None or retag:
        kept = body.metadata if body.metadata is not None else doc.metadata
        metadata = {k: v for k, v in kept.items() if k != tags.TAGS_KEY}
        metadata |= body.filter_by_metadata or {}
        if retag:
            metadata[tags.TAGS_KEY] = retagged
        elif tags.TAGS_KEY in doc.metadata:
            metadata[tags.TAGS_KEY] = doc.metadata[tags.TAGS_KEY]
    change = DocumentChange(
        content=body.content, metadata=metadata, task_type=body.task_type,
        date=params.timestamp(body.document_date, "$.documentDate"),
    )  # fmt: skip
    return reply(ref(await params.engine(request).documents.update(doc.namespace, doc.id, change)))


async def delete(request: web.Request) -> web.Response:
    """204 with no body: SDK 3 reads none (it casts the reply to None)."""
    doc = await find(request)
    deleted, _ = await params.engine(request).documents.delete(doc.namespace, [doc.id])
    if not deleted:  # deleted by another request in between
        raise NotFound("document not found", f"no document {request.match_info['id']!r}")
    return web.Response(status=204)


async def delete_bulk(request: web.Request) -> web.Response:
    """By ids (in any of the caller's namespaces), or every document of each tag's namespace."""
    body = await decode(request, V3BulkDelete)
    if not body.ids and not body.container_tags:
        raise BadRequest("nothing to delete", "$: send ids or containerTags")
    engine = params.engine(request)
    count, errors = 0, []
    for doc_ref in body.ids or []:
        try:
            doc = await engine.documents.find(doc_ref, params.scope(request))
        except NotFound:
            errors.append(V3IdError(id=doc_ref, error="not found"))
            continue
        deleted, failed = await engine.documents.delete(doc.namespace, [doc.id])
        count += deleted
        errors += [V3IdError(id=doc_ref, error=e) for _, e in failed]
    names = [
        params.namespace_in_scope(request, tag, f"$.containerTags[{i}]")
        for i, tag in enumerate(body.container_tags or [])
    ]
    for ns in names:
        while docs := (await engine.documents.list_documents(
            ns, page=1, limit=100, sort="createdAt", order="asc", filter=None
        ))[0]:  # fmt: skip
            deleted, _ = await engine.documents.delete(ns, [d.id for d in docs])
            count += deleted
    result = V3BulkDeleted(
        deleted_count=count, success=True, errors=errors if body.ids else None,
        container_tags=body.container_tags,
    )  # fmt: skip
    return reply(result)


ROUTES = [
    Route(
        method="DELETE", path="/v3/documents/bulk", handler=delete_bulk, role="write",
        namespace_from="body", body=V3BulkDelete, reply=V3BulkDeleted, deprecated=True,
        summary="Legacy v3: delete documents by id, or every document of container tags",
    ),
    Route(
        method="PATCH", path="/v3/documents/{id}", handler=update, role="write",
        namespace_from="subject", body=V3Update, reply=V3Ref, deprecated=True,
        summary="Legacy v3: change a document (by id or customId)",
    ),
    Route(
        method="DELETE", path="/v3/documents/{id}", handler=delete, role="write",
        namespace_from="subject", status=204, deprecated=True,
        summary="Legacy v3: hard-delete a document (by id or customId); 204, no body",
    ),
]  # fmt: skip
