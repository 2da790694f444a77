"""v5 file routes: a multipart upload becomes a document.

PDF and HTML files are converted to text (in a capped child process, as fetched pages are), with
the file's own title; other files must be UTF-8 text. An unreadable PDF is a 422: its type is
one smem reads, so a 415 would send the client looking for a type that would do better.
"""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from smemd.api import params, render
from smemd.api.forms import Part, read_form
from smemd.api.state import STATE
from smemd.api.wire import check_depth, reply
from smemd.engine.ingest.documents import DocumentChange, NewDocument, TaskType
from smemd.engine.ingest.fetching import CONVERT_TIMEOUT_S
from smemd.errors import BadRequest, UnsupportedMediaType
from smemd.fetch.convert import Unconvertible, convert_isolated, kind_of
from smemd.http.route import Route
from smemd.protocol.memory import DocumentRef, FileForm, FilePatchForm, Metadata
from smemd.store import deadline
from smemd.store.records import Document

FIELDS = tuple(f.encode_name for f in msgspec.structs.fields(FileForm))


def json_metadata(part: Part | None) -> dict[str, Any]:
    if part is None or not part.data:
        return {}
    check_depth(part.data)
    try:
        return msgspec.json.decode(part.data, type=Metadata)
    except msgspec.MsgspecError as err:
        raise BadRequest("invalid form", f"$.{part.name}: {err}") from err


class Content(msgspec.Struct, frozen=True):
    text: str
    type: str
    title: str | None = None


async def _content(file: Part) -> Content:
    """The file as text: converted when it is PDF or HTML (by type, first bytes or name)."""
    if not file.data.strip():
        raise BadRequest("invalid form", "$.file: the file is empty")
    name = file.filename or "the file"
    media = file.content_type.partition(";")[0].strip().lower()
    kind = kind_of(file.data, media, file.filename)
    if kind in ("pdf", "webpage"):
        try:
            converted = await convert_isolated(
                file.data, file.content_type, name, timeout_s=CONVERT_TIMEOUT_S
            )
        except Unconvertible as err:  # 422
            what = "PDF" if kind == "pdf" else "HTML"
            raise Unconvertible(f"cannot read the {what} file", err.message) from None
        return Content(converted.text, converted.kind, converted.title)
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError:
        if kind == "text":
            raise UnsupportedMediaType(
                "only UTF-8 text files can be read", f"{name} is not UTF-8 text"
            ) from None
        raise UnsupportedMediaType(
            "unsupported file type",
            f"{name} ({media or 'no content type'}) is binary: UTF-8 text, HTML and PDF are read",
        ) from None
    return Content(text, "text")


async def upload(request: web.Request) -> web.Response:
    """POST /document/file (new) and /document/file/{id} (replace the content of {id}); PATCH
    /document/file/{id} changes what its fields say, and the content only if a file is sent."""
    ns = params.namespace(request)
    form = await read_form(request, FIELDS, request.app[STATE].max_body_bytes)
    metadata = {**json_metadata(form.get("metadata")), **json_metadata(form.get("group"))}
    doc = await store_file(request, ns, form, metadata, ref=request.match_info.get("id"))
    return reply(render.document_ref(doc))


async def store_file(
    request: web.Request, ns: str, form: dict[str, Part], metadata: dict[str, Any], *,
    ref: str | None = None, caller_id: str | None = None,
) -> Document:  # fmt: skip
    """The form's file as a new document (or the new content of `ref`)."""
    file = form.get("file")
    if file is None and request.method != "PATCH":
        raise BadRequest("invalid form", "$.file: required")
    if file is not None and file.filename:
        metadata.setdefault("filename", file.filename)
    engine = params.engine(request)
    task_type: TaskType = "memory"
    if "taskType" in form and form["taskType"].text() == "superrag":
        task_type = "superrag"
    date = params.timestamp(form["date"].text(), "$.date") if "date" in form else None
    content = await _content(file) if file is not None else None
    # Converting is not store work: the store gets the request's whole budget after it.
    with deadline.within(request.app[STATE].config.api.request_timeout_s):
        if ref is None:
            assert content is not None
            new = NewDocument(
                content=content.text, caller_id=caller_id, metadata=metadata, date=date,
                task_type=task_type, type=content.type, title=content.title,
            )  # fmt: skip
            return await engine.documents.add(ns, new)
        change = DocumentChange(
            content=content.text if content else None, metadata=metadata or None, date=date,
            task_type=task_type if content or "taskType" in form else None,
            type=content.type if content else None, title=content.title if content else None,
        )  # fmt: skip
        return await engine.documents.update(ns, ref, change)


ROUTES = [
    Route(
        method="POST", path="/ns/{ns}/document/file", handler=upload, role="write",
        namespace_from="path", form=FileForm, reply=DocumentRef,
        summary="Add a document from an uploaded file",
    ),
    Route(
        method="POST", path="/ns/{ns}/document/file/{id}", handler=upload, role="write",
        namespace_from="path", form=FileForm, reply=DocumentRef,
        summary="Replace a document's content with an uploaded file",
    ),
    Route(
        method="PATCH", path="/ns/{ns}/document/file/{id}", handler=upload, role="write",
        namespace_from="path", form=FilePatchForm, reply=DocumentRef,
        summary="Change a document's fields from a form; a file, when sent, replaces its content",
    ),
]  # fmt: skip
