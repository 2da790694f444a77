"""Wire types of the recent-requests log (`/v1/requests`)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from smemd.protocol import Query, Reply

RECENT_KEPT = 500  # how many requests the daemon remembers, and so the most one reply holds


class RecentRequestsQuery(Query):
    limit: Annotated[int, msgspec.Meta(ge=1, le=RECENT_KEPT)] = 50


class RecentRequest(Reply):
    """One finished request. `route` is the route's template (`/ns/{ns}/search`), never the path
    itself, which would name namespaces and ids, and never the query string."""

    at: str  # when it finished
    method: str
    route: str
    status: int
    duration_ms: float
    request_id: str


class RecentRequests(Reply):
    requests: list[RecentRequest]  # newest first
    kept: int  # the most the daemon remembers
