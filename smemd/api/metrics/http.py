"""The HTTP side: requests by route, method and status, their seconds by route, the listeners'
connections, and the daemon's uptime (the series `/v1/metrics` has always had, by name)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from smemd.api.metrics.families import counter, gauge, histogram, one
from smemd.connections import Listener
from smemd.tallies import Tally, Timings


class HttpCollector(Collector):
    def __init__(self, listeners: Mapping[str, Listener]) -> None:
        self.listeners = listeners  # by name (`tcp`, `socket`), filled as they start
        self.requests = Tally()  # route, method, status
        self.seconds = Timings()  # route
        self.started = time.monotonic()

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.add(route, method, str(status))
        self.seconds.observe(seconds, route)

    def collect(self) -> Iterator[Metric]:
        yield one(
            "smem_uptime_seconds", "Seconds since smemd started.", time.monotonic() - self.started
        )
        yield gauge(
            "smem_connections_open", "Connections a listener holds.", ["listener"],
            (([name], listener.open) for name, listener in self.listeners.items()),
        )  # fmt: skip
        refused = Tally()
        for name, listener in self.listeners.items():
            refused.add(name, n=listener.refused)
        yield counter(
            "smem_connections_refused",
            "Connections answered 503: the listener was full.", ["listener"], refused,
        )  # fmt: skip
        yield counter(
            "smem_http_requests", "HTTP requests answered, by route, method and status.",
            ["route", "method", "status"], self.requests,
        )  # fmt: skip
        yield histogram(
            "smem_http_request_duration_seconds", "Time to answer an HTTP request.", ["route"],
            self.seconds,
        )  # fmt: skip
