"""The nodes' routes: `GET /v1/nodes`, `/v1/cards`, `/v1/telemetry`, and admin node actions.

`/v1/nodes` serves every fleet with nodes; the card fields (state machine, temperature,
memory, model-server health) are filled on the `vca2` fleet. Actions start and answer 202:
the node's state tells how they go.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

from aiohttp import web

from smemd import instants
from smemd.api import params
from smemd.api.state import STATE
from smemd.api.wire import reply
from smemd.cards.hardware import Cards
from smemd.cards.manager import CardManager
from smemd.cards.telemetry import Sample as TelemetrySample
from smemd.errors import BadRequest, Conflict, NotFound
from smemd.fleet.pool import Node
from smemd.http.route import Route
from smemd.protocol.cards import (
    ActionReply,
    Card,
    NodeInfo,
    Nodes,
    Sample,
    Telemetry,
    TelemetryQuery,
)
from smemd.protocol.cards import Cards as CardsReply

ACTIONS = ("boot", "reboot", "poweroff", "reset")


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def _pool_state(node: Node, paused: frozenset[str]) -> str:
    if node.name in paused:
        return "lent"
    return "resting" if node.is_open(time.monotonic()) else "up" if node.healthy else "down"


async def nodes(request: web.Request) -> web.Response:
    state = request.app[STATE]
    fleet = state.fleet
    if fleet is None or fleet.pool is None:
        return reply(Nodes(fleet_kind=state.config.fleet.kind, nodes=[]))
    paused = fleet.pool.paused()
    cards = fleet.cards
    views = {v.id: v for v in cards.manager.nodes()} if cards and cards.manager else {}
    infos = []
    for node in fleet.pool.nodes.values():
        info = NodeInfo(
            id=node.name, lanes=sorted(node.lanes), roles=sorted(node.clients),
            state=_pool_state(node, paused), healthy=node.healthy, lendable=node.lendable,
            in_flight={lane: n for lane, n in node.in_flight.items() if n},
            last_error=node.last_error,
        )  # fmt: skip
        view = views.get(node.name)
        if view is not None and cards is not None:
            sample = cards.telemetry.latest(node.name)
            # Lent through the pause file, the node is the render farm's whatever its card state.
            info.state = "lent" if node.name in paused else view.state
            info.address, info.card, info.cpu = view.address, view.card, view.cpu
            info.last_error = view.last_error or node.last_error
            info.since, info.uptime_s = _iso(view.since), view.uptime_s
            info.model_health, info.restarts, info.reboots = (
                view.health,
                view.restarts,
                view.reboots,
            )
            if sample is not None:
                info.temperature_c = sample.temperature_c
                info.mem_total_kb, info.mem_available_kb = (
                    sample.mem_total_kb,
                    sample.mem_available_kb,
                )
                info.sampled_at = _iso(sample.at)
        infos.append(info)
    return reply(Nodes(fleet_kind=state.config.fleet.kind, nodes=infos))


def _cards(request: web.Request) -> tuple[Cards, CardManager]:
    fleet = request.app[STATE].fleet
    cards = fleet.cards if fleet is not None else None
    if cards is None or cards.manager is None:
        kind = request.app[STATE].config.fleet.kind
        raise Conflict("no cards", f"the {kind} fleet has no cards; [fleet] kind = vca2 has")
    return cards, cards.manager


async def cards(request: web.Request) -> web.Response:
    _, manager = _cards(request)
    by_card: dict[int, dict[str, str]] = {}
    for view in manager.nodes():
        by_card.setdefault(view.card, {})[view.id] = view.state
    return reply(CardsReply(cards=[Card(card=c, nodes=n) for c, n in sorted(by_card.items())]))


def _sample(sample: TelemetrySample) -> Sample:
    return Sample(
        at=_iso(sample.at) or "", temperature_c=sample.temperature_c,
        mem_total_kb=sample.mem_total_kb, mem_available_kb=sample.mem_available_kb,
        error=sample.error,
    )  # fmt: skip


async def telemetry(request: web.Request) -> web.Response:
    cards, manager = _cards(request)
    query = params.query(request, TelemetryQuery)
    node, raw_since = query.node, query.since
    if node not in {v.id for v in manager.nodes()}:
        raise BadRequest("invalid query", f"node: expected one of the card nodes, got {node!r}")
    try:
        since = float(raw_since)
    except ValueError:
        try:
            since = instants.parse(raw_since)
        except instants.InstantError as err:
            raise BadRequest("invalid query", f"since: seconds or ISO-8601: {err}") from None
    if not math.isfinite(since):
        raise BadRequest("invalid query", f"since: expected a finite time, got {raw_since!r}")
    samples = [_sample(s) for s in cards.telemetry.since(node, since)]
    return reply(Telemetry(node=node, samples=samples))


async def node_action(request: web.Request) -> web.Response:
    _, manager = _cards(request)
    node, action = request.match_info["node"], request.match_info["action"]
    if action not in ACTIONS:
        raise NotFound("no such action", f"expected one of {', '.join(ACTIONS)}, got {action!r}")
    getattr(manager, action)(node)  # starts it; NotFound or Conflict when it cannot
    return reply(ActionReply(action=action, nodes=[node]), status=202)


async def card_reset(request: web.Request) -> web.Response:
    _, manager = _cards(request)
    raw = request.match_info["card"]
    card = int(raw) if raw.isdigit() else -1
    members = sorted(v.id for v in manager.nodes() if v.card == card)
    if not members:
        raise NotFound("no such card", f"card: expected one of the configured cards, got {raw!r}")
    manager.reset_card(card)
    return reply(ActionReply(action="reset", nodes=members), status=202)


ROUTES = [
    Route(
        method="GET", path="/v1/nodes", handler=nodes, reply=Nodes,
        summary="Every node: lanes, roles, state, health, calls in flight; on cards, telemetry",
    ),
    Route(
        method="GET", path="/v1/cards", handler=cards, reply=CardsReply,
        summary="Each VCA card with its nodes' states",
    ),
    Route(
        method="GET", path="/v1/telemetry", handler=telemetry, query=TelemetryQuery,
        reply=Telemetry, summary="A card node's temperature and memory samples of the last hour",
    ),
    Route(
        method="POST", path="/v1/nodes/{node}/{action}",
        handler=node_action, role="admin", reply=ActionReply, status=202,
        summary="Start an action on a card node; its state tells how it goes",
    ),
    Route(
        method="POST", path="/v1/cards/{card}/reset", handler=card_reset, role="admin",
        reply=ActionReply, status=202, summary="Reset every node of a card, then bring them up",
    ),
]  # fmt: skip
