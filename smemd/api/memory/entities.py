"""Entity routes: the namespace's entities with how many memories name each, and one entity's
profile."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import reply
from smemd.http.route import Route
from smemd.protocol.entities import Entities, EntitiesQuery, EntityOut, EntityProfile
from smemd.store.records import Entity


async def entities(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, EntitiesQuery)
    found, total = await params.engine(request).entities.listing(
        ns, q=query.q, kind=query.kind, page=query.page, limit=query.limit
    )
    return reply(
        Entities(
            entities=[entity_out(e) for e in found],
            pagination=render.pagination(query.page, query.limit, total),
        )
    )


async def entity(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    found = await params.engine(request).entities.profile(ns, request.match_info["id"])
    now = time.time()
    return reply(
        EntityProfile(
            entity=entity_out(found.entity),
            current=[render.memory(m, now) for m in found.current],
            history=[render.memory(m, now) for m in found.history],
            related=[entity_out(e) for e in found.related],
        )
    )


def entity_out(e: Entity) -> EntityOut:
    return EntityOut(
        id=e.id, name=e.name, kind=e.kind, aliases=e.aliases,
        first_seen=render.iso(e.first_seen) or "", last_seen=render.iso(e.last_seen) or "",
        memories=e.memories,
    )  # fmt: skip


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/entities", handler=entities, namespace_from="path",
        query=EntitiesQuery, reply=Entities,
        summary="The namespace's entities, most often named first",
        description=(
            "People, places, organisations and things the memories name: the names extraction"
            " gave where a model read the document, else those a heuristic finds (chat"
            " speakers, capitalised names, possessives). `memories` counts the live memories"
            " naming each; `q` matches a part of the name or an alias, any case."
        ),
    ),
    Route(
        method="GET", path="/ns/{ns}/entities/{id}", handler=entity, namespace_from="path",
        reply=EntityProfile, summary="One entity: its current facts, its history, who is named with it",
        description=(
            "`{id}` is the entity's id, or a name or alias of it (any case). `current`: the"
            " live memories naming it by any of its names; `history`: the superseded versions"
            " naming it, with their valid times; both newest valid time first. `related`:"
            " entities named in the same live memories, with how many."
        ),
    ),
]  # fmt: skip
