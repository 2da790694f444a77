"""The organisation (`/organization`): one per daemon, its context shared by every namespace,
and how many namespaces it holds. It spans namespaces, so a token limited to some may not call it."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.wire import decode, reply
from smemd.http.route import Route
from smemd.protocol.namespaces import Organization, UpdateOrganization


async def _current(request: web.Request) -> web.Response:
    context, count = await params.engine(request).namespace_changes.organisation()
    return reply(Organization(organizational_context=context, namespace_count=count))


async def get(request: web.Request) -> web.Response:
    return await _current(request)


async def update(request: web.Request) -> web.Response:
    body = await decode(request, UpdateOrganization)
    if body.organizational_context is not None:
        changes = params.engine(request).namespace_changes
        await changes.set_organisation_context(body.organizational_context)
    return await _current(request)


ROUTES = [
    Route(
        method="GET", path="/organization", handler=get, namespace_from="every",
        reply=Organization, summary="The organisation's context and its number of namespaces",
    ),
    Route(
        method="PATCH", path="/organization", handler=update, role="write",
        namespace_from="every", body=UpdateOrganization, reply=Organization,
        summary="Set the organisation's context, shared by every namespace",
    ),
]  # fmt: skip
