"""The fleet's routes: `GET /v1/lanes`, and lending nodes with admin `POST|DELETE /v1/pause`."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from aiohttp import web

from smemd.api.state import STATE, ApiState
from smemd.api.wire import decode, reply
from smemd.errors import BadRequest, Conflict
from smemd.fleet.assembly import Fleet
from smemd.fleet.pause import (
    MAX_AHEAD,
    Pause,
    PauseFile,
    clear_pause,
    lendability,
    validate_pause,
    write_pause,
)
from smemd.http.route import Route
from smemd.protocol import ActivePause, Lanes, NodeStatus, PauseReply, PauseRequest, ResumeRequest

_DURATION = re.compile(r"^(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?$")


def _pause_view(pause: Pause | None) -> ActivePause | None:
    if pause is None:
        return None
    return ActivePause(
        nodes=sorted(pause.nodes), until=pause.until.isoformat(), by=pause.by, reason=pause.reason
    )


async def lanes(request: web.Request) -> web.Response:
    state = request.app[STATE]
    fleet = state.fleet
    kind = state.config.fleet.kind
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
    return reply(
        Lanes(
            fleet_kind=kind,
            interactive=[n.id for n in nodes if "interactive" in n.lanes],
            background=[n.id for n in nodes if "background" in n.lanes],
            nodes=nodes,
            pause=_pause_view(fleet.pauses.active(now) if fleet.pauses else None),
            pause_error=fleet.pauses.error if fleet.pauses else None,
        )
    )


def _lending(state: ApiState) -> Fleet:
    fleet = state.fleet
    if fleet is None or fleet.pool is None or fleet.pauses is None:
        raise Conflict("nothing to lend", f"the {state.config.fleet.kind} fleet has no nodes")
    return fleet


def _until(body: PauseRequest, now: datetime) -> str:
    if (body.until is None) == (body.for_ is None):
        raise BadRequest("invalid request body", "$: give exactly one of until and for")
    if body.until is not None:
        return body.until
    match = _DURATION.match(body.for_ or "")
    if not match or not any(match.groupdict().values()):
        raise BadRequest(
            "invalid request body",
            f"$.for: expected a duration like 2h, 90m or 1h30m, got {body.for_!r}",
        )
    hours, minutes, seconds = (int(match[k] or 0) for k in "hms")
    # In whole seconds first: a timedelta or datetime of "99999999h" would overflow.
    length = hours * 3600 + minutes * 60 + seconds
    if length == 0:
        raise BadRequest("invalid request body", f"$.for: {body.for_!r} is no time at all")
    if length > MAX_AHEAD.total_seconds():
        raise BadRequest(
            "invalid request body",
            f"$.for: {body.for_!r} is more than {MAX_AHEAD.days} days "
            f"({MAX_AHEAD.days * 24}h); lending is temporary",
        )
    return (now + timedelta(seconds=length)).isoformat()


def checked_pause(
    body: PauseRequest, *, active: Pause | None, known: Mapping[str, bool], now: datetime
) -> Pause:
    """The pause a request makes, checked by the rules the file's reader applies; writes nothing.

    The nodes join those of `active`, and all of them share the new `until`.
    """
    nodes = sorted(set(body.nodes) | (active.nodes if active else set()))
    file = PauseFile(nodes=nodes, until=_until(body, now), by=body.by, reason=body.reason)
    return validate_pause(file, known=known, now=now.timestamp())


async def pause(request: web.Request) -> web.Response:
    """Lend nodes: they join any pause in force, and all lent nodes share the new `until`."""
    state = request.app[STATE]
    fleet = _lending(state)
    assert fleet.pauses is not None and fleet.pool is not None
    body = await decode(request, PauseRequest)
    now = datetime.now(UTC)
    checked = checked_pause(
        body,
        active=fleet.pauses.active(now.timestamp()),
        known=lendability(state.config.fleet.nodes),
        now=now,
    )
    await asyncio.to_thread(write_pause, state.config.paths.pause_file, checked)
    await fleet.pauses.refresh()
    drained = (
        await fleet.pool.wait_drained(body.nodes, within=body.timeout_s) if body.wait else None
    )
    return reply(PauseReply(pause=_pause_view(fleet.pauses.active()), drained=drained))


async def resume(request: web.Request) -> web.Response:
    state = request.app[STATE]
    fleet = _lending(state)
    assert fleet.pauses is not None
    body = await decode(request, ResumeRequest) if await request.read() else ResumeRequest()
    await asyncio.to_thread(clear_pause, state.config.paths.pause_file, body.nodes)
    await fleet.pauses.refresh()
    return reply(PauseReply(pause=_pause_view(fleet.pauses.active())))


ROUTES = [
    Route(
        method="GET", path="/v1/lanes", handler=lanes, reply=Lanes,
        summary="The fleet's nodes by lane, the pause in force and any pause error",
    ),
    Route(
        method="POST", path="/v1/pause", handler=pause, role="admin", body=PauseRequest,
        reply=PauseReply, summary="Lend nodes to the render farm until an instant or for a while",
    ),
    Route(
        method="DELETE", path="/v1/pause", handler=resume, role="admin", body=ResumeRequest,
        body_optional=True, reply=PauseReply, summary="Take lent nodes back (all, or some)",
    ),
]  # fmt: skip
