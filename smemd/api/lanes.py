"""`GET /v1/lanes`: which nodes serve which lane, their health, what is lent and until when."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from aiohttp import web

from smemd.api.state import STATE
from smemd.api.wire import reply
from smemd.protocol import ActivePause, Lanes, NodeStatus


async def lanes(request: web.Request) -> web.Response:
    fleet = request.app[STATE].fleet
    kind = request.app[STATE].config.fleet.kind
    if fleet is None or fleet.pool is None:
        return reply(Lanes(fleet_kind=kind, interactive=[], background=[], nodes=[]))
    now = time.time()
    paused = fleet.pauses.paused(now) if fleet.pauses else frozenset()
    nodes = [
        NodeStatus(
            id=node.name,
            lanes=sorted(node.lanes),
            roles=sorted(node.clients),
            healthy=node.healthy,
            resting=node.is_open(time.monotonic()),
            paused=node.name in paused,
            lendable=node.lendable,
            in_flight={lane: n for lane, n in node.in_flight.items() if n},
            last_error=node.last_error,
        )
        for node in fleet.pool.nodes.values()
    ]
    active = fleet.pauses.active(now) if fleet.pauses else None
    return reply(
        Lanes(
            fleet_kind=kind,
            interactive=[n.id for n in nodes if "interactive" in n.lanes],
            background=[n.id for n in nodes if "background" in n.lanes],
            nodes=nodes,
            pause=ActivePause(
                nodes=sorted(active.nodes),
                until=datetime.fromtimestamp(active.expires_at, UTC).isoformat(),
                by=active.by,
                reason=active.reason,
            )
            if active
            else None,
            pause_error=fleet.pauses.error if fleet.pauses else None,
        )
    )


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/v1/lanes", lanes)
