"""The review of contradictions: listed per namespace or across the token's, and resolved."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import decode, reply
from smemd.http.route import Route
from smemd.protocol.review import ContradictionOut, Resolve, Resolved, Review, ReviewQuery
from smemd.store.records import Contradiction

_OPEN = (
    "Open contradictions, newest first: two memories about one thing that neither supersedes,"
    " both still latest and not forgotten, that a person has not said are both true; each with"
    " both memories in full."
)


async def namespace_review(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, ReviewQuery)
    found, total = await params.engine(request).review.contradictions(
        ns, page=query.page, limit=query.limit
    )
    return reply(_review(found, total, query))


async def review(request: web.Request) -> web.Response:
    query = params.query(request, ReviewQuery)
    found, total = await params.engine(request).review.contradictions(
        page=query.page, limit=query.limit, scope=params.scope(request)
    )
    return reply(_review(found, total, query))


async def resolve(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, Resolve)
    done = await params.engine(request).review.resolve(
        ns, body.memory_id, body.contradicts, body.keep
    )
    now, label = time.time(), done.label
    resolved = Resolved(
        memory=render.memory(done.memory, now), contradicts=render.memory(done.contradicts, now),
        keep=label.value, subject_id=label.subject_id,
        resolved_at=render.iso(label.created_at) or "", changed=done.changed,
    )  # fmt: skip
    return reply(resolved)


def _review(found: list[Contradiction], total: int, query: ReviewQuery) -> Review:
    now = time.time()
    return Review(
        contradictions=[_contradiction(c, now) for c in found],
        pagination=render.pagination(query.page, query.limit, total),
    )


def _contradiction(c: Contradiction, now: float) -> ContradictionOut:
    return ContradictionOut(
        namespace=c.memory.namespace, memory=render.memory(c.memory, now),
        contradicts=render.memory(c.contradicts, now), score=c.score,
        created_at=render.iso(c.created_at) or "", label=c.label,
    )  # fmt: skip


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/review", handler=namespace_review, namespace_from="path",
        query=ReviewQuery, reply=Review, description=_OPEN,
        summary="The namespace's open contradictions, for a person to resolve",
    ),
    Route(
        method="GET", path="/v1/review", handler=review, namespace_from="listing",
        query=ReviewQuery, reply=Review, description=_OPEN,
        summary="Open contradictions in every namespace the token may see",
    ),
    Route(
        method="POST", path="/ns/{ns}/review", handler=resolve, role="write",
        namespace_from="path", body=Resolve, reply=Resolved,
        summary="Resolve a contradiction: keep one memory (the other is forgotten) or both",
        description=(
            "`keep` is `memoryId` or `contradicts` (that one stands; the other is forgotten with"
            " reason `contradicted by <id>`, which restore undoes and so reopens the pair) or"
            " `both` (both are true: the pair leaves the list). The label is kept for audit"
            " (kind `contradiction`). Once a memory of the pair no longer stands, the same"
            " resolution again answers as before (`changed: false`) and another is a 409."
        ),
    ),
]  # fmt: skip
