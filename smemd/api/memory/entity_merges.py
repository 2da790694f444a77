"""Alias routes: suggestions of names that may be one entity, a person's merge and split, and
the decisions made (by a person or the judge)."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params, render
from smemd.api.memory.entities import entity_out
from smemd.api.wire import decode, reply
from smemd.engine.entities.suggestions import Named, Suggestion
from smemd.http.route import Route
from smemd.protocol.entities import (
    AliasDecisionOut,
    AliasDecisions,
    EntitiesQuery,
    EntityOut,
    Merge,
    Merged,
    NameOut,
    Split,
    SplitDone,
    SuggestionOut,
    Suggestions,
    SuggestionsQuery,
)  # fmt: skip
from smemd.store.records import AliasDecision


async def suggestions(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, SuggestionsQuery)
    found = await params.engine(request).aliases.suggest(ns, query.limit)
    return reply(Suggestions(suggestions=[_suggestion(s) for s in found]))


async def merge(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, Merge)
    engine = params.engine(request)
    made = await engine.aliases.merge(ns, body.into, body.names)
    kept = await engine.entities.profile(ns, made[0].entity_id)
    names = await engine.aliases.names({i for d in made for i in (d.entity_id, d.alias_id)})
    return reply(
        Merged(entity=entity_out(kept.entity), decisions=[_decision(d, names) for d in made])
    )


async def split(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    body = await decode(request, Split)
    done = await params.engine(request).aliases.split(ns, body.name)
    names = {e.id: e.name for e in done.entities}
    return reply(
        SplitDone(
            undone=_decision(done.undone, names), entities=[entity_out(e) for e in done.entities]
        )
    )


async def decisions(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, EntitiesQuery)
    found, total, names = await params.engine(request).aliases.decisions(
        ns, page=query.page, limit=query.limit
    )
    return reply(
        AliasDecisions(
            decisions=[_decision(d, names) for d in found],
            pagination=render.pagination(query.page, query.limit, total),
        )
    )


def _suggestion(s: Suggestion) -> SuggestionOut:
    return SuggestionOut(
        keep=_named(s.keep), alias=_named(s.alias), name_score=s.name_score,
        context_score=s.context_score, score=s.score,
    )  # fmt: skip


def _named(e: Named) -> EntityOut:
    return EntityOut(
        id=e.id, name=e.names[0], kind=e.kind, aliases=list(e.names[1:]), first_seen="",
        last_seen="", memories=e.memories,
    )  # fmt: skip


def _decision(d: AliasDecision, names: dict[str, str]) -> AliasDecisionOut:
    return AliasDecisionOut(
        id=d.id, entity=NameOut(id=d.entity_id, name=names.get(d.entity_id, "")),
        alias=NameOut(id=d.alias_id, name=names.get(d.alias_id, "")), same=d.same, by=d.by,
        probability=d.probability, judgement_id=d.judgement_id,
        created_at=render.iso(d.created_at) or "", undone_at=render.iso(d.undone_at),
    )  # fmt: skip


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/entities/suggestions", handler=suggestions,
        namespace_from="path", query=SuggestionsQuery, reply=Suggestions,
        summary="Names that may be one entity, best first",
        description=(
            "Pairs of the namespace's entities whose names can name one entity (the same words,"
            " a nickname, an initial, an acronym, a part of the longer name, a spelling slip),"
            " the looser ones only where what the memories say of each is alike (`contextScore`,"
            " the cosine of their memories' mean embeddings). Two names in one memory, or a"
            " short name that fits several longer ones, weigh a pair down. Pairs already decided"
            " are left out. With a model, dreaming puts these to the judge."
        ),
    ),
    Route(
        method="POST", path="/ns/{ns}/entities/merge", handler=merge, role="write",
        namespace_from="path", body=Merge, reply=Merged,
        summary="Merge names into one entity (a person's decision, recorded; undone by split)",
        description=(
            "Each of `names` (ids, names or aliases, any case) becomes an alias of `into`, with"
            " the names merged into it before; its memories, times and related entities are"
            " the entity's from then on, memories stored later under the alias included. A"
            " name already part of `into` is a 409."
        ),
    ),
    Route(
        method="POST", path="/ns/{ns}/entities/split", handler=split, role="write",
        namespace_from="path", body=Split, reply=SplitDone,
        summary="Split a merged name out again (undoes the merge that made it an alias)",
        description=(
            "The merge that made `name` an alias is undone exactly: the names it brought point"
            " back, and memories named by them, stored before or after the merge, belong to it"
            " again. The pair is recorded as two, so it is not suggested or judged again. A"
            " name that is an entity of its own is a 409."
        ),
    ),
    Route(
        method="GET", path="/ns/{ns}/entities/decisions", handler=decisions,
        namespace_from="path", query=EntitiesQuery, reply=AliasDecisions,
        summary="Decisions on pairs of names: merged or two, by a person or the judge",
        description=(
            "Newest first. A judge's decision gives its probability and `judgementId`: a label"
            " on that call (`POST /v1/labels {judgementId, correct}`) merges or splits as it says."
        ),
    ),
]  # fmt: skip
