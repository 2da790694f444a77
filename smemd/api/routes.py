"""smem's own /v1 routes for the daemon itself."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from smemd import __version__, log
from smemd.api.calibration import dreaming_status
from smemd.api.state import STATE, ApiState
from smemd.api.wire import decode, reply
from smemd.protocol import Health, LogLevelChange, LogLevelReply, Status

HEURISTICS = ["extraction", "reconciliation", "answers"]


async def health(request: web.Request) -> web.Response:
    return reply(Health(status="ok", version=__version__))


async def status(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return reply(
        Status(
            version=__version__,
            pid=state.pid,
            uptime_s=round(state.uptime_s, 3),
            started_at=datetime.fromtimestamp(state.started_at, UTC).isoformat(timespec="seconds"),
            state_dir=state.config.paths.state_dir,
            listeners=state.listeners,
            fleet_kind=state.config.fleet.kind,
            log_level=log.level_name(),
            embedder=state.engine.embedder.name if state.engine else "",
            warnings=_warnings(state),
            heuristics=_heuristics(state),
            dreaming=await dreaming_status(state.engine) if state.engine else None,
        )
    )


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
        text=state.metrics.render(state.uptime_s),
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


def add_routes(app: web.Application) -> None:
    state = app[STATE]
    router = app.router
    router.add_get("/v1/health", health)
    router.add_get("/v1/status", status)
    router.add_get("/v1/metrics", metrics)
    router.add_get("/v1/activity", activity)
    state.admin_routes.add(router.add_post("/v1/log-level", set_log_level))
