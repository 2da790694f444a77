"""Retraction routes: take back what a document or a memory alone taught, and undo that."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler

from smemd.api import params
from smemd.api.wire import reply
from smemd.engine.retraction import SubjectKind
from smemd.http.route import Route
from smemd.protocol.retraction import IngestUndone, RetractionResult


def _handler(kind: SubjectKind, *, undo: bool) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        ns = params.namespace(request)
        retractions = params.engine(request).retractions
        ref = request.match_info["id"]
        act = retractions.unretract if undo else retractions.retract
        outcome = await act(ns, kind, ref)
        return reply(
            RetractionResult(
                retraction_id=outcome.retraction_id, subject_kind=kind,
                subject_id=outcome.subject_id, undone=undo, withdrawn=outcome.withdrawn,
                reinstated=outcome.reinstated, unlinked=outcome.unlinked,
            )
        )  # fmt: skip

    return handle


def _ingest_handler(*, undo: bool) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        undos = params.engine(request).undos
        act = undos.undo if undo else undos.redo
        return reply(await act(params.namespace(request), request.match_info["id"]))

    return handle


_CASCADE = (
    "Withdraws every memory whose every source is withdrawn, transitively through `derives`;"
    " a withdrawn version's predecessor is latest again; a memory with another live source"
    " stays and loses only this source. Withdrawn memories are forgotten with forgetReason"
    " `retracted`. 409 if already retracted."
)
_UNDO = (
    "Puts back exactly the rows the retraction changed. 409, restoring nothing, if a later"
    " change touched them (the reply names them, and a later retraction to undo first)."
)

ROUTES = [
    Route(
        method="POST", path="/ns/{ns}/document/{id}/retract",
        handler=_handler("document", undo=False), role="write", namespace_from="path",
        reply=RetractionResult, summary="Withdraw a document as a source, with the cascade",
        description=_CASCADE,
    ),
    Route(
        method="POST", path="/ns/{ns}/document/{id}/unretract",
        handler=_handler("document", undo=True), role="write", namespace_from="path",
        reply=RetractionResult, summary="Undo a document's retraction exactly",
        description=_UNDO,
    ),
    Route(
        method="POST", path="/ns/{ns}/memories/{id}/retract",
        handler=_handler("memory", undo=False), role="write", namespace_from="path",
        reply=RetractionResult, summary="Withdraw a memory, and what was derived from it alone",
        description=_CASCADE,
    ),
    Route(
        method="POST", path="/ns/{ns}/memories/{id}/unretract",
        handler=_handler("memory", undo=True), role="write", namespace_from="path",
        reply=RetractionResult, summary="Undo a memory's retraction exactly",
        description=_UNDO,
    ),
    Route(
        method="POST", path="/ns/{ns}/ingest/{id}/undo", handler=_ingest_handler(undo=True),
        role="write", namespace_from="path", reply=IngestUndone,
        summary="Undo an add: retract every document its ingest id brought, with the cascade",
        description="The ingest id is the `Smem-Ingest-Id` header of the add's reply (a"
        " document, a batch, an upload, an import). " + _CASCADE.replace(" 409 if already"
        " retracted.", "") + " A document retracted already is passed over; 409 while any is"
        " still being ingested, 404 for an id that brought nothing here.",
    ),
    Route(
        method="POST", path="/ns/{ns}/ingest/{id}/redo", handler=_ingest_handler(undo=False),
        role="write", namespace_from="path", reply=IngestUndone,
        summary="Redo an undone add: unretract its documents, exactly",
        description=_UNDO,
    ),
]  # fmt: skip
