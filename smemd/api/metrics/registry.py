"""One daemon's metrics: its registry, the HTTP collector from the start, the engine's and the
fleet's once they are up, and the text a scrape gets."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from smemd.api.metrics.engine import EngineCollector
from smemd.api.metrics.fleet import FleetCollector
from smemd.api.metrics.http import HttpCollector
from smemd.connections import Listener
from smemd.engine.core import Engine
from smemd.fleet.assembly import Fleet


class Metrics:
    def __init__(self, listeners: Mapping[str, Listener]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.http = HttpCollector(listeners)
        self.registry.register(self.http)
        self._engine: EngineCollector | None = None

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.http.observe(route, method, status, seconds)

    def attach(self, engine: Engine, fleet: Fleet, state_dir: Path) -> None:
        """Collect the engine's and the fleet's series from now on."""
        self._engine = EngineCollector(engine, state_dir)
        self.registry.register(self._engine)
        self.registry.register(FleetCollector(fleet))

    async def render(self) -> bytes:
        """The Prometheus text format, gauges that take the store read first."""
        if self._engine is not None:
            await self._engine.refresh()
        return generate_latest(self.registry)
