"""smem's own /v1 routes about the daemon itself: health, readiness (its checks in `readiness`),
status, metrics, activity, tokens."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from aiohttp import web

from smemd import __version__, log
from smemd.api.access import ANONYMOUS, PUBLIC, principal
from smemd.api.control.calibration import dreaming_status
from smemd.api.control.readiness import CHECK_TIMEOUT_S, ready
from smemd.api.state import STATE, ApiState
from smemd.api.wire import decode, reply
from smemd.errors import SmemError
from smemd.http.route import Route
from smemd.protocol import (
    Activity,
    Caller,
    Health,
    LogLevelChange,
    LogLevelReply,
    PeerStatus,
    Status,
    StoreStatus,
    TokenList,
)
from smemd.protocol.readiness import Readiness

HEURISTICS = ["extraction", "reconciliation", "answers"]
RETRY_AFTER_S = 5


async def health(request: web.Request) -> web.Response:
    engine = request.app[STATE].engine
    if engine is not None and not engine.store_open:  # out of a load balancer's rotation
        response = reply(
            Health(status="unavailable", version=__version__, store="unavailable"), status=503
        )
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response
    return reply(Health(status="ok", version=__version__))


async def status(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return reply(
        Status(
            version=__version__,
            pid=state.pid,
            uptime_s=round(state.uptime_s, 3),
            started_at=_iso(state.started_at),
            state_dir=state.config.paths.state_dir,
            listeners=state.listeners,
            fleet_kind=state.config.fleet.kind,
            log_level=log.level_name(),
            embedder=state.engine.embedder.name if state.engine else "",
            warnings=_warnings(state),
            heuristics=_heuristics(state),
            dreaming=await dreaming_status(state.engine) if state.engine else None,
            store=await _store(state),
        )
    )


async def _store(state: ApiState) -> StoreStatus | None:
    if state.engine is None:
        return None
    engine = state.engine
    kind, location, version = engine.store_identity()
    peers: list[PeerStatus] = []
    with contextlib.suppress(SmemError):  # the store away: the status says the rest
        peers = [
            PeerStatus(
                id=p.id,
                host=p.host,
                pid=p.pid,
                version=p.version,
                started_at=_iso(p.started_at),
                seen_at=_iso(p.seen_at),
            )
            for p in await engine.other_daemons()
        ]
    return StoreStatus(
        kind=kind, location=location, server_version=version, daemon=engine.peers.me.id,
        peers=peers,
    )  # fmt: skip


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _heuristics(state: ApiState) -> list[str]:
    if state.engine is None:
        return []
    parts = [] if state.engine.llm else HEURISTICS
    return parts + [f"dreaming {part}" for part in state.engine.dreamer.heuristics]


def _warnings(state: ApiState) -> list[str]:
    warnings = []
    if state.engine is not None and state.engine.embedder.is_fallback:
        warnings.append(
            f"embedder {state.engine.embedder.name} is the hashed fallback: recall is lexical-grade"
        )
    return warnings


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.Response(
        body=await state.metrics.render(),
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Prometheus-Format": "0.0.4"},
    )


async def activity(request: web.Request) -> web.Response:
    return reply(request.app[STATE].activity.snapshot())


async def set_log_level(request: web.Request) -> web.Response:
    change = await decode(request, LogLevelChange)
    previous = log.set_level(change.logger, change.level)
    log.daemon.warning("log level of %s: %s -> %s", change.logger, previous, change.level)
    return reply(LogLevelReply(logger=change.logger, level=change.level, previous=previous))


async def whoami(request: web.Request) -> web.Response:
    caller = principal(request)
    required = request.app[STATE].tokens.required
    if caller is PUBLIC:  # no token, or a wrong one: on a public route that is not refused
        caller = PUBLIC if required else ANONYMOUS
    authenticated = caller is not PUBLIC
    return reply(
        Caller(
            name=caller.name,
            role=caller.role if authenticated else None,
            namespaces=list(caller.scope.patterns or ["*"]) if authenticated else [],
            token_required=required,
        )
    )


async def tokens(request: web.Request) -> web.Response:
    return reply(TokenList(tokens=request.app[STATE].tokens.listing()))


ROUTES = [
    Route(
        method="GET", path="/v1/health", handler=health, reply=Health, public=True,
        from_anywhere=True,
        summary="Liveness: the daemon answers; never needs a token",
    ),
    Route(
        method="GET", path="/v1/ready", handler=ready, reply=Readiness, content_type="text/plain",
        public=True, from_anywhere=True,
        summary="Readiness: the store takes a write, the disk has room, the embedder answers",
        description="For a load balancer: 200 when every check passes, 503 naming the failing "
        "ones. A line per check (`ok store: writable`, `fail disk: ...`), or the Readiness JSON "
        f"when Accept asks for application/json. Each check is bounded ({CHECK_TIMEOUT_S:g} s); "
        "the indexes' loading is said, never a failure. Without a token where one is required, "
        "the details are left out.",
    ),
    Route(
        method="GET", path="/v1/whoami", handler=whoami, reply=Caller, public=True,
        summary="Who the caller is: its role and namespaces, and whether a token is required",
        description="Answers without a token too (role null when one is required), so a "
        "client can tell whether to ask for one before calling anything else.",
    ),
    Route(
        method="GET", path="/v1/status", handler=status, reply=Status,
        summary="The process, its listeners and fleet, warnings, and what runs on heuristics",
    ),
    Route(
        method="GET", path="/v1/metrics", handler=metrics, content_type="text/plain",
        summary="Prometheus text: HTTP requests and latency, ingest, recall, indexes, store,"
        " dreaming, the fleet's model calls and nodes, the cards (README: Operating smem)",
    ),
    Route(
        method="GET", path="/v1/activity", handler=activity, reply=Activity,
        summary="Requests per minute and per-route p50/p95 over the last hour",
    ),
    Route(
        method="POST", path="/v1/log-level", handler=set_log_level, role="admin",
        body=LogLevelChange, reply=LogLevelReply, summary="Set a logger's level",
    ),
    Route(
        method="GET", path="/v1/tokens", handler=tokens, role="admin", namespace_from="every",
        reply=TokenList, summary="The configured tokens: names, roles and namespaces, never secrets",
    ),
]  # fmt: skip
