"""Counts of smemd.tallies as Prometheus metric families, for the collectors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from smemd.tallies import BUCKETS, Tally, Timings

_BOUNDS = [*(repr(bound) for bound in BUCKETS), "+Inf"]


def counter(name: str, doc: str, labels: Sequence[str], tally: Tally) -> CounterMetricFamily:
    """`name` without `_total` (the exposition adds it)."""
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, n in sorted(tally.counts.items()):
        family.add_metric(list(values), n)
    return family


def histogram(
    name: str, doc: str, labels: Sequence[str], timings: Timings
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, series in sorted(timings.series.items()):
        cumulative, buckets = 0, []
        for bound, n in zip(_BOUNDS, series.buckets, strict=True):
            cumulative += n
            buckets.append((bound, float(cumulative)))
        family.add_metric(list(values), buckets, series.total)
    return family


def gauge(
    name: str, doc: str, labels: Sequence[str], values: Iterable[tuple[Sequence[str], float]]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family


def one(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)
