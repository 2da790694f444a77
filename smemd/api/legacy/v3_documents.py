"""Legacy v3 document writes: add, batch add and file upload (`v3_changes`: update, delete).

Each renames its fields to the v5 add or update (`customId`→`id`, `documentDate`→`date`,
`filterByMetadata`→`group`, `entityContext`→ the namespace's supporting context, which is
where the old API kept it: on the container tag) and calls what the v5 route calls. A document
keeps its container tags in its metadata (see `tags`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec
from aiohttp import web

from smemd.api import params, render
from smemd.api.forms import Part, read_form
from smemd.api.legacy import tags
from smemd.api.memory import documents, files
from smemd.api.state import STATE
from smemd.api.wire import decode, reply
from smemd.engine.core import Engine
from smemd.engine.ingest.documents import NewDocument
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol.legacy_v3 import (
    Shared,
    V3Add,
    V3Batch,
    V3BatchReply,
    V3FileForm,
    V3Ref,
)
from smemd.protocol.memory import AddDocument
from smemd.store.records import Document

FORM_FIELDS = tuple(f.encode_name for f in msgspec.structs.fields(V3FileForm))


def ref(doc: Document) -> V3Ref:
    return V3Ref(id=doc.id, status=render.STATUS[doc.status])


def _new(item: V3Add, shared: Shared, namespace_tags: list[str], path: str) -> NewDocument:
    """The v5 add of one document: its own fields, else the batch's."""
    date, date_path = item.document_date, f"{path}.documentDate"
    if date is None:
        date, date_path = shared.document_date, "$.documentDate"
    params.timestamp(date, date_path)  # a bad date named by its legacy name
    metadata = item.metadata if item.metadata is not None else shared.metadata
    body = AddDocument(
        content=item.content, id=item.custom_id, metadata={**(metadata or {}), tags.TAGS_KEY: namespace_tags},
        group=item.filter_by_metadata if item.filter_by_metadata is not None else shared.filter_by_metadata,
        date=date,
    )  # fmt: skip
    dreaming = item.dreaming or shared.dreaming
    return documents.new_document(body, item.task_type or shared.task_type, path, dreaming)


async def _entity_context(engine: Engine, namespace: str, text: str | None) -> None:
    if text is not None:
        await engine.namespace_changes.set_context(namespace, text, create=True)


async def add(request: web.Request) -> web.Response:
    body = await decode(request, V3Add)
    ns = tags.namespace_of(request, body.container_tag, body.container_tags)
    engine = params.engine(request)
    new = _new(body, body, tags.kept_tags(request, body.container_tag, body.container_tags), "$")
    await _entity_context(engine, ns, body.entity_context)
    return reply(ref(await engine.documents.add(ns, new)))


async def add_batch(request: web.Request) -> web.Response:
    body = await decode(request, V3Batch)
    engine = params.engine(request)
    items: list[documents.Pending] = []
    contexts: dict[str, str] = {}  # one write per namespace, the last document's word winning
    for i, raw in enumerate(body.documents):
        item = V3Add(content=raw) if isinstance(raw, str) else raw
        own = item.container_tag or item.container_tags
        tag, named = (
            (item.container_tag, item.container_tags)
            if own
            else (body.container_tag, body.container_tags)
        )
        path = f"$.documents[{i}]" if own else "$"
        ns = tags.namespace_of(request, tag, named, path=path)
        kept = tags.kept_tags(request, tag, named, path=path)
        make = partial(_new, item, body, kept, f"$.documents[{i}]")
        items.append(documents.Pending(ns, make, item.custom_id))
        if context := item.entity_context or body.entity_context:
            contexts[ns] = context
    for ns, context in contexts.items():
        await _entity_context(engine, ns, context)
    accepted, failed = await documents.add_all(engine, items)
    return reply(V3BatchReply(results=accepted + failed, success=len(accepted), failed=len(failed)))


def _form_tags(form: dict[str, Part]) -> tuple[str | None, list[str] | None]:
    """`containerTag`, and `containerTags` as a JSON array or one tag."""
    tag = form["containerTag"].text() if "containerTag" in form else None
    if "containerTags" not in form:
        return tag, None
    text = form["containerTags"].text()
    if not text.lstrip().startswith("["):
        return tag, [text]
    try:
        return tag, msgspec.json.decode(text, type=list[str])
    except msgspec.MsgspecError as err:
        raise BadRequest("invalid form", f"$.containerTags: {err}") from None


async def upload(request: web.Request) -> web.Response:
    form = await read_form(request, FORM_FIELDS, request.app[STATE].max_body_bytes)
    tag, named = _form_tags(form)
    ns = tags.namespace_of(request, tag, named)
    caller_id = form["customId"].text() if "customId" in form else None
    if caller_id is not None and not 1 <= len(caller_id) <= 255:
        raise BadRequest("invalid form", "$.customId: expected 1 to 255 characters")
    metadata: dict[str, Any] = {
        **files.json_metadata(form.get("metadata")),
        **files.json_metadata(form.get("filterByMetadata")),
        tags.TAGS_KEY: tags.kept_tags(request, tag, named),
    }
    engine = params.engine(request)
    context = form["entityContext"].text() if "entityContext" in form else None
    if context is not None and len(context) > 1500:
        raise BadRequest("invalid form", "$.entityContext: longer than 1500 characters")
    doc = await files.store_file(request, ns, form, metadata, caller_id=caller_id)
    await _entity_context(engine, ns, context)
    return reply(ref(doc))


ROUTES = [
    Route(
        method="POST", path="/v3/documents", handler=add, role="write", namespace_from="body",
        body=V3Add, reply=V3Ref, deprecated=True,
        summary="Legacy v3: add a document (the v5 add; containerTag names the namespace)",
    ),
    Route(
        method="POST", path="/v3/documents/batch", handler=add_batch, role="write",
        namespace_from="body", body=V3Batch, reply=V3BatchReply, deprecated=True,
        summary="Legacy v3: add up to 600 documents, as objects or strings",
    ),
    Route(
        method="POST", path="/v3/documents/file", handler=upload, role="write",
        namespace_from="body", form=V3FileForm, reply=V3Ref, deprecated=True,
        summary="Legacy v3: add a document from an uploaded file",
    ),
]  # fmt: skip
