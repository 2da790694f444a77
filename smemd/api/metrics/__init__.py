"""The daemon's metrics (`GET /v1/metrics`): one prometheus-client registry per daemon, so that
several daemons in one process (the tests) keep theirs apart.

The daemon's parts count in plain Python (smemd.tallies) and keep their state; the collectors
here read both when the registry is scraped, and name every series: HTTP (`http`), the engine's
ingest, recall, indexes, store and dreaming (`engine`), the fleet's model calls and nodes and
the cards (`fleet`). Gauges whose reading takes the store (open jobs, dreaming's backlog) are
read by `refresh` just before a scrape.
"""

from __future__ import annotations

from smemd.api.metrics.registry import Metrics

__all__ = ["Metrics"]
