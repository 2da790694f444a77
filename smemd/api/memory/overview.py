"""A namespace at a glance (`GET /ns/{ns}/overview`): its memories counted by status, type and
hour, its documents by how many facts they gave, and its open jobs. Reads only, for the console's
Home, which polls it."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params, render
from smemd.api.wire import reply
from smemd.errors import NotFound
from smemd.http.route import Route
from smemd.protocol.overview import FactsBin, HourCount, Overview, StatusCounts

HOURS = 48
# Documents that gave this many facts or more share the last bin: a few long documents would
# otherwise stretch the distribution into a long empty tail.
FACTS_CAP = 20


async def overview(request: web.Request) -> web.Response:
    name = params.namespace(request)
    engine = params.engine(request)
    if await engine.namespace(name) is None:
        raise NotFound("namespace not found", f"no namespace {name!r}")
    now = params.now()
    since = (now // 3600 - (HOURS - 1)) * 3600  # the start of the hour 47 hours ago
    counted = await engine.namespace_changes.census(name, now=now, since=since, facts_cap=FACTS_CAP)
    census = counted.memories
    return reply(
        Overview(
            namespace=name,
            documents=counted.documents,
            jobs_open=counted.jobs_open,
            memories=StatusCounts(**census.by_status),
            types=census.live_by_type,
            per_hour=[
                HourCount(hour=render.iso(since + h * 3600) or "", count=census.per_hour.get(h, 0))
                for h in range(HOURS)
            ],
            facts_per_document=[
                FactsBin(facts=n, documents=count)
                for n, count in sorted(census.per_document.items())
            ],
            facts_cap=FACTS_CAP,
        )
    )


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/overview", handler=overview, namespace_from="path",
        reply=Overview,
        summary="A namespace at a glance: memories by status, type and hour, facts per document",
        description="Counts every version of every memory once: `live` (the latest, neither"
        " forgotten nor expired), `superseded` or `forgotten`. `perHour` is the last 48 hours,"
        " oldest first. 404 when the namespace does not exist.",
    ),
]  # fmt: skip
