"""What the daemon's parts count as they work, in plain Python: how many of each thing happened
(a `Tally`) and how long each took (a `Timings`), each kept by a few label values.

The parts count; `smemd.api.metrics` alone names the series and writes them out (through
prometheus-client, one registry per daemon), so the engine, the fleet and the cards need no
metrics library, and a part made by a test counts into its own tallies. Label values must come
from small, fixed sets (a phase, a node, an outcome), never from a request.
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections import Counter
from collections.abc import Iterator

# Upper bounds in seconds, from a control route's fraction of a millisecond to a model call's
# seconds and a large document's phase of minutes.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
           10.0, 30.0, 60.0, 300.0)  # fmt: skip

Labels = tuple[str, ...]


class Tally:
    """How many times each thing happened, by label values."""

    def __init__(self) -> None:
        self.counts: Counter[Labels] = Counter()

    def add(self, *labels: str, n: int = 1) -> None:
        self.counts[labels] += n


class Series:
    """One label set's observations: a count, a sum and the count in each bucket."""

    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS) + 1)  # the last one is +Inf
        self.count = 0
        self.total = 0.0


class Timings:
    """How long each thing took, by label values (a histogram's series)."""

    def __init__(self) -> None:
        self.series: dict[Labels, Series] = {}

    def observe(self, seconds: float, *labels: str) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = Series()
        series.buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
        series.count += 1
        series.total += seconds

    @contextlib.contextmanager
    def timing(self, *labels: str) -> Iterator[None]:
        """Observe the block's wall time, whether it ends well or not."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - started, *labels)
