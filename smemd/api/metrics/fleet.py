"""The fleet's series: model calls by node, role and outcome and their seconds, each node's calls
in flight, health, open circuit and pause, the pause's expiry; and on cards, each node's state,
temperature, memory, boots, restarts and reboots, and vcactl's calls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import get_args

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from smemd.api.metrics.families import counter, gauge, histogram, one
from smemd.cards.nodestate import State
from smemd.fleet.assembly import Fleet
from smemd.tallies import Tally

KIB = 1024


class FleetCollector(Collector):
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def collect(self) -> Iterator[Metric]:
        fleet = self.fleet
        yield counter(
            "smem_model_calls",
            "Model calls by node, role and outcome (ok; failed: another node may take it;"
            " refused: the request's own fault).",
            ["node", "role", "outcome"], fleet.calls,
        )  # fmt: skip
        yield histogram(
            "smem_model_call_seconds", "Seconds of one model call.", ["node", "role"],
            fleet.call_seconds,
        )  # fmt: skip
        yield from self._nodes()
        yield from self._cards()

    def _nodes(self) -> Iterator[Metric]:
        fleet, now = self.fleet, time.monotonic()
        nodes = list(fleet.pool.nodes.values()) if fleet.pool is not None else []
        paused = fleet.pool.paused() if fleet.pool is not None else frozenset()
        yield gauge(
            "smem_model_calls_in_flight", "Model calls a node is serving now.", ["node"],
            (([n.name], n.busy) for n in nodes),
        )  # fmt: skip
        yield gauge(
            "smem_node_healthy", "1 while a node's servers answer /health.", ["node"],
            (([n.name], float(n.healthy)) for n in nodes),
        )  # fmt: skip
        yield gauge(
            "smem_node_circuit_open", "1 while a node rests after straight failures.", ["node"],
            (([n.name], float(n.is_open(now))) for n in nodes),
        )  # fmt: skip
        yield gauge(
            "smem_node_paused", "1 while a node is paused or lent (it takes no new calls).",
            ["node"], (([n.name], float(n.name in paused)) for n in nodes),
        )  # fmt: skip
        active = fleet.pauses.active() if fleet.pauses is not None else None
        yield one(
            "smem_pause_expires_seconds", "Seconds until the pause lifts by itself (0: none).",
            max(0.0, active.expires_at - time.time()) if active is not None else 0.0,
        )  # fmt: skip

    def _cards(self) -> Iterator[Metric]:
        cards = self.fleet.cards
        if cards is None or cards.manager is None:
            return
        views = cards.manager.nodes()
        yield gauge(
            "smem_card_node_state", "1 for the state a card node is in, 0 for the others.",
            ["node", "state"],
            (([v.id, state], float(v.state == state)) for v in views for state in get_args(State)),
        )  # fmt: skip
        samples = [(v.id, cards.telemetry.latest(v.id)) for v in views]
        yield gauge(
            "smem_card_node_temperature_celsius", "A node's package temperature, last sampled.",
            ["node"],
            (([node], s.temperature_c) for node, s in samples if s and s.temperature_c is not None),
        )  # fmt: skip
        yield gauge(
            "smem_card_node_memory_available_bytes", "A node's available memory, last sampled.",
            ["node"],
            (([node], s.mem_available_kb * KIB) for node, s in samples
             if s and s.mem_available_kb is not None),
        )  # fmt: skip
        for name, doc in (
            ("boots", "Bring-ups begun on a node (each attempt)."),
            ("restarts", "A node's model servers restarted by the health ladder."),
            ("reboots", "A node's reboots and resets, by the health ladder or an admin."),
        ):
            tally = Tally()
            for view in views:
                tally.add(view.id, n=getattr(view, name))
            yield counter(f"smem_card_node_{name}", doc, ["node"], tally)
        vcactl = cards.manager.ctx.vcactl
        yield histogram(
            "smem_vcactl_seconds", "Seconds of one vcactl call, by command.", ["command"],
            vcactl.seconds,
        )  # fmt: skip
        yield counter(
            "smem_vcactl_failures", "vcactl calls that failed, by command and error code.",
            ["command", "code"], vcactl.failures,
        )  # fmt: skip
