"""v5 file routes: a multipart upload becomes a document. Text only until a converter exists."""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import BodyPartReader, web

from smemd.api import params, render
from smemd.api.state import STATE
from smemd.api.wire import reply
from smemd.engine.documents import DocumentChange, NewDocument, TaskType
from smemd.errors import BadRequest, PayloadTooLarge, SmemError
from smemd.protocol.memory import Metadata

FIELDS = (
    "file",
    "supportingContext",
    "metadata",
    "group",
    "date",
    "taskType",
    "dreaming",
    "fileType",
    "mimeType",
)


class UnsupportedMedia(SmemError):
    status = 415
    code = "unsupported_media_type"


async def _form(request: web.Request) -> dict[str, Any]:
    """The multipart fields, the file as (filename, bytes); unknown fields are a 400."""
    if not request.content_type.startswith("multipart/"):
        raise BadRequest(
            "expected multipart/form-data", f"got {request.content_type or 'no content type'}"
        )
    limit = request.app[STATE].max_body_bytes
    form: dict[str, Any] = {}
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name not in FIELDS:
            raise BadRequest("invalid form", f"$.{getattr(part, 'name', '?')}: unknown field")
        data = await part.read(decode=True)
        if len(data) > limit:
            raise PayloadTooLarge("file too large", f"limit {limit} bytes")
        form[part.name] = (part.filename or "", data) if part.name == "file" else data.decode()
    return form


def _json_metadata(text: str | None, path: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        return msgspec.json.decode(text.encode(), type=Metadata)
    except msgspec.MsgspecError as err:
        raise BadRequest("invalid form", f"{path}: {err}") from err


def _text(file: tuple[str, bytes]) -> str:
    name, data = file
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsupportedMedia(
            "only UTF-8 text files can be read", f"{name or 'file'} is not UTF-8 text"
        ) from None
    if not text.strip():
        raise BadRequest("invalid form", "$.file: the file is empty")
    return text


async def upload(request: web.Request) -> web.Response:
    """POST /document/file (new) and /document/file/{id} (replace the content of {id})."""
    ns = params.namespace(request)
    form = await _form(request)
    if "file" not in form:
        raise BadRequest("invalid form", "$.file: required")
    metadata = {
        **_json_metadata(form.get("metadata"), "$.metadata"),
        **_json_metadata(form.get("group"), "$.group"),
    }
    name, _ = form["file"]
    if name:
        metadata.setdefault("filename", name)
    engine = params.engine(request)
    task_type: TaskType = "superrag" if form.get("taskType") == "superrag" else "memory"
    date = params.timestamp(form.get("date"), "$.date")
    ref = request.match_info.get("id")
    if ref is None:
        new = NewDocument(
            content=_text(form["file"]), metadata=metadata, date=date, task_type=task_type
        )
        doc = await engine.documents.add(ns, new)
    else:
        change = DocumentChange(
            content=_text(form["file"]), metadata=metadata or None, date=date, task_type=task_type
        )
        doc = await engine.documents.update(ns, ref, change)
    return reply(render.document_ref(doc))


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_post("/ns/{ns}/document/file", upload)
    router.add_post("/ns/{ns}/document/file/{id}", upload)
