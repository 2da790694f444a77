"""The judge's log, labels, calibration and dreaming over HTTP."""

from __future__ import annotations

import msgspec
from aiohttp import web

from smemd.api import params
from smemd.api.render import iso
from smemd.api.wire import decode, reply
from smemd.engine.core import Engine
from smemd.engine.judgement import calibration as engine_calibration
from smemd.errors import BadRequest
from smemd.http.route import Route
from smemd.protocol import Dreaming
from smemd.protocol.calibration import (
    Calibration,
    DreamingChange,
    FitReply,
    FitResult,
    Fitted,
    JudgeCalibration,
    Judgement,
    Judgements,
    JudgementsQuery,
    LabelReply,
    LabelRequest,
)
from smemd.store.records import Judged, Label


async def judgements(request: web.Request) -> web.Response:
    engine = params.engine(request)
    query = params.query(request, JudgementsQuery)
    if query.namespace is not None:
        params.namespace_in_scope(request, query.namespace, "?namespace")
    limit = query.limit
    calls, labels = await engine.labels.judged(
        query.kind, namespace=query.namespace, after=query.after, limit=limit,
        scope=params.scope(request),
    )  # fmt: skip
    return reply(
        Judgements(
            judgements=[_judgement(engine, call, labels.get(call.id)) for call in calls],
            next_after=calls[-1].seq if len(calls) == limit else None,
        )
    )


async def label(request: web.Request) -> web.Response:
    body = await decode(request, LabelRequest)
    labels = params.engine(request).labels
    scope = params.scope(request)
    if body.memory_id is not None and body.type is not None and _only(body, "memory_id", "type"):
        done = await labels.memory_type(body.memory_id, body.type, scope)
    elif (
        body.judgement_id is not None
        and body.correct is not None
        and _only(body, "judgement_id", "correct")
    ):
        done = await labels.call(body.judgement_id, body.correct, scope)
    elif body.link is not None and body.correct is not None and _only(body, "link", "correct"):
        done = await labels.link(body.link.from_id, body.link.to_id, body.correct, scope)
    else:
        raise BadRequest(
            "a label is one of: memoryId and type; judgementId and correct; link and correct",
            f"got {', '.join(sorted(_given(body))) or 'nothing'}",
        )
    return reply(_label(done), status=201)


async def calibration(request: web.Request) -> web.Response:
    engine = params.engine(request)
    reports = await engine.calibration.report()
    return reply(Calibration(judges=[_report(r) for r in reports], heuristics=engine.judge is None))


async def fit(request: web.Request) -> web.Response:
    results = await params.engine(request).calibration.fit()
    return reply(
        FitReply(results=[msgspec.convert(r, FitResult, from_attributes=True) for r in results])
    )


async def dreaming(request: web.Request) -> web.Response:
    return reply(await dreaming_status(params.engine(request)))


async def set_dreaming(request: web.Request) -> web.Response:
    body = await decode(request, DreamingChange)
    engine = params.engine(request)
    engine.dreamer.set_enabled(body.enabled)
    return reply(await dreaming_status(engine))


async def dreaming_status(engine: Engine) -> Dreaming:
    dreamer, progress = engine.dreamer, engine.dreamer.progress
    untyped, unlinked, uninferred = await dreamer.backlog()
    return Dreaming(
        enabled=dreamer.enabled, state=progress.state, quiet_after_s=dreamer.quiet_s,
        quiet_for_s=round(dreamer.clock.quiet_for(), 3),
        untyped=untyped, unlinked=unlinked,
        typing_asked=progress.typing_asked, typed=progress.typed,
        links_looked=progress.links_looked, linked=progress.linked,
        last_step_at=iso(progress.last_step_at), errors=progress.errors,
        last_error=progress.last_error, heuristics=dreamer.heuristics,
        inference=dreamer.inference, uninferred=uninferred,
        inference_looked=progress.inference_looked, inference_asked=progress.inference_asked,
        inferred=progress.inferred, aliases_asked=progress.aliases_asked,
        aliases_merged=progress.aliases_merged,
    )  # fmt: skip


def _given(body: LabelRequest) -> set[str]:
    return {name for name in LabelRequest.__struct_fields__ if getattr(body, name) is not None}


def _only(body: LabelRequest, *names: str) -> bool:
    return _given(body) == set(names)


def _label(done: Label) -> LabelReply:
    assert done.kind != "contradiction"  # a review's label, never made here
    return LabelReply(
        kind=done.kind, subject_id=done.subject_id, value=done.value,
        created_at=iso(done.created_at),
    )  # fmt: skip


def _judgement(engine: Engine, call: Judged, label: str | None) -> Judgement:
    return Judgement(
        id=call.id, seq=call.seq, namespace=call.namespace, kind=call.kind,
        subject_id=call.subject_id, text=call.text, options=call.options,
        probabilities=call.probabilities, proposal=call.proposal, applied=call.applied,
        fallback=call.fallback, decided=call.decided_at(engine.calibration.threshold(call.kind)),
        created_at=iso(call.created_at), label=label,
    )  # fmt: skip


def _report(r: engine_calibration.JudgeReport) -> JudgeCalibration:
    fitted = r.fitted
    return JudgeCalibration(
        kind=r.kind, threshold=r.threshold, default_threshold=r.default_threshold,
        fitted=None if fitted is None else Fitted(
            threshold=fitted.threshold, intercept=round(fitted.intercept, 4),
            slope=round(fitted.slope, 4), labels=fitted.labels, fitted_at=iso(fitted.fitted_at),
        ),
        judgements=r.judgements, labels=r.labels, decided=r.decided, correct=r.correct,
        accuracy=round(r.correct / r.decided, 4) if r.decided else None,
        coverage=round(r.decided / r.labels, 4) if r.labels else None,
    )  # fmt: skip


ROUTES = [
    Route(
        method="GET", path="/v1/judgements", handler=judgements, namespace_from="listing",
        query=JudgementsQuery, reply=Judgements,
        summary="The judge's calls, oldest first, with their probabilities and labels",
    ),
    Route(
        method="POST", path="/v1/labels", handler=label, role="write", namespace_from="subject",
        body=LabelRequest, reply=LabelReply, status=201,
        summary="A person's word: a memory's type, or right/wrong on a judge's call",
    ),
    Route(
        method="GET", path="/v1/calibration", handler=calibration, namespace_from="every",
        reply=Calibration, summary="Each judge's threshold and its accuracy on the labels",
    ),
    Route(
        method="POST", path="/v1/calibration/fit", handler=fit, role="admin",
        namespace_from="every", reply=FitReply,
        summary="Fit each judge's threshold on its labels and redo past calls under it",
    ),
    Route(
        method="GET", path="/v1/dreaming", handler=dreaming, reply=Dreaming,
        summary="Dreaming's state, backlog and progress",
    ),
    Route(
        method="POST", path="/v1/dreaming", handler=set_dreaming, role="admin",
        body=DreamingChange, reply=Dreaming, summary="Switch dreaming on or off",
    ),
]  # fmt: skip
