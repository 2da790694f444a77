"""Request counters and latency histograms in the Prometheus text format."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping

from smemd.connections import Listener

# Upper bounds in seconds; the control routes live under a millisecond, model calls in seconds.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _Histogram:
    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last one is +Inf
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.count += 1
        self.total += seconds


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.latency: dict[str, _Histogram] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests[route, method, status] += 1
        histogram = self.latency.get(route)
        if histogram is None:
            histogram = self.latency[route] = _Histogram()
        histogram.observe(seconds)

    def render(self, uptime_s: float, listeners: Mapping[str, Listener]) -> str:
        lines = [
            "# HELP smem_uptime_seconds Seconds since smemd started.",
            "# TYPE smem_uptime_seconds gauge",
            f"smem_uptime_seconds {uptime_s:.3f}",
            "# HELP smem_connections_open Connections a listener holds.",
            "# TYPE smem_connections_open gauge",
            *(f'smem_connections_open{{listener="{n}"}} {li.open}' for n, li in listeners.items()),
            "# HELP smem_connections_refused_total Connections answered 503: the listener was full.",
            "# TYPE smem_connections_refused_total counter",
            *(
                f'smem_connections_refused_total{{listener="{n}"}} {li.refused}'
                for n, li in listeners.items()
            ),
            "# HELP smem_http_requests_total HTTP requests answered, by route, method and status.",
            "# TYPE smem_http_requests_total counter",
        ]
        for (route, method, status), n in sorted(self.requests.items()):
            labels = f'route="{_escape(route)}",method="{method}",status="{status}"'
            lines.append(f"smem_http_requests_total{{{labels}}} {n}")
        lines += [
            "# HELP smem_http_request_duration_seconds Time to answer an HTTP request.",
            "# TYPE smem_http_request_duration_seconds histogram",
        ]
        for route, h in sorted(self.latency.items()):
            name, label = "smem_http_request_duration_seconds", f'route="{_escape(route)}"'
            cumulative = 0
            for bound, n in zip((*map(repr, BUCKETS), "+Inf"), h.counts, strict=True):
                cumulative += n
                lines.append(f'{name}_bucket{{{label},le="{bound}"}} {cumulative}')
            lines.append(f"{name}_sum{{{label}}} {h.total:.6f}")
            lines.append(f"{name}_count{{{label}}} {h.count}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
