"""v5 file routes: a multipart upload becomes a document. Text only until a converter exists."""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from smemd.api import params, render
from smemd.api.forms import Part, read_form
from smemd.api.route import Route
from smemd.api.state import STATE
from smemd.api.wire import check_depth, reply
from smemd.engine.documents import DocumentChange, NewDocument, TaskType
from smemd.errors import BadRequest, SmemError
from smemd.protocol.memory import DocumentRef, FileForm, Metadata

FIELDS = tuple(f.encode_name for f in msgspec.structs.fields(FileForm))


class UnsupportedMedia(SmemError):
    status = 415
    code = "unsupported_media_type"


def _json_metadata(part: Part | None) -> dict[str, Any]:
    if part is None or not part.data:
        return {}
    check_depth(part.data)
    try:
        return msgspec.json.decode(part.data, type=Metadata)
    except msgspec.MsgspecError as err:
        raise BadRequest("invalid form", f"$.{part.name}: {err}") from err


def _text(file: Part) -> str:
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedMedia(
            "only UTF-8 text files can be read", f"{file.filename or 'file'} is not UTF-8 text"
        ) from None
    if not text.strip():
        raise BadRequest("invalid form", "$.file: the file is empty")
    return text


async def upload(request: web.Request) -> web.Response:
    """POST /document/file (new) and /document/file/{id} (replace the content of {id})."""
    ns = params.namespace(request)
    form = await read_form(request, FIELDS, request.app[STATE].max_body_bytes)
    file = form.get("file")
    if file is None:
        raise BadRequest("invalid form", "$.file: required")
    metadata = {**_json_metadata(form.get("metadata")), **_json_metadata(form.get("group"))}
    if file.filename:
        metadata.setdefault("filename", file.filename)
    engine = params.engine(request)
    task_type: TaskType = "memory"
    if "taskType" in form and form["taskType"].text() == "superrag":
        task_type = "superrag"
    date = params.timestamp(form["date"].text(), "$.date") if "date" in form else None
    ref = request.match_info.get("id")
    if ref is None:
        new = NewDocument(content=_text(file), metadata=metadata, date=date, task_type=task_type)
        doc = await engine.documents.add(ns, new)
    else:
        change = DocumentChange(
            content=_text(file), metadata=metadata or None, date=date, task_type=task_type
        )
        doc = await engine.documents.update(ns, ref, change)
    return reply(render.document_ref(doc))


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
]  # fmt: skip
