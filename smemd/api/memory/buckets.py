"""A namespace's profile buckets (`/ns/{ns}/profile/buckets`): named topics the profile fills
(`POST /ns/{ns}/profile` with `buckets`). Every namespace has the built-in ones (`preferences`),
which it cannot change (409); its own it adds, changes and removes."""

from __future__ import annotations

from aiohttp import web

from smemd.api import params
from smemd.api.wire import decode, reply
from smemd.http.route import Route
from smemd.protocol.namespaces import DeleteBuckets, ProfileBuckets, PutBuckets


async def get(request: web.Request) -> web.Response:
    changes = params.engine(request).namespace_changes
    return reply(ProfileBuckets(buckets=await changes.buckets(params.namespace(request))))


async def put(request: web.Request) -> web.Response:
    body = await decode(request, PutBuckets)
    changes = params.engine(request).namespace_changes
    return reply(
        ProfileBuckets(buckets=await changes.put_buckets(params.namespace(request), body.buckets))
    )


async def delete(request: web.Request) -> web.Response:
    body = await decode(request, DeleteBuckets)
    changes = params.engine(request).namespace_changes
    names = body.buckets
    return reply(
        ProfileBuckets(buckets=await changes.delete_buckets(params.namespace(request), names))
    )


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/profile/buckets", handler=get, namespace_from="path",
        reply=ProfileBuckets, summary="The profile's buckets: the built-in ones and the namespace's",
    ),
    Route(
        method="PUT", path="/ns/{ns}/profile/buckets", handler=put, role="write",
        namespace_from="path", body=PutBuckets, reply=ProfileBuckets,
        summary="Add or change the namespace's own buckets (name: description)",
        description="Answers the effective buckets. 409 for a built-in bucket's name.",
    ),
    Route(
        method="DELETE", path="/ns/{ns}/profile/buckets", handler=delete, role="write",
        namespace_from="path", body=DeleteBuckets, reply=ProfileBuckets,
        summary="Remove some of the namespace's own buckets; unknown names are ignored",
        description="Answers the effective buckets. 409 for a built-in bucket's name.",
    ),
]  # fmt: skip
