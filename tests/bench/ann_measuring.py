"""What one ANN configuration is measured on and reports: a case (one size's vectors, queries,
truths and filter), queries timed one at a time, build costs, and a line of figures."""

from __future__ import annotations

import gc
import importlib
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.bench.ann_vectors import K, exact_top, recall

FILTER_FRACTION = 0.10


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Timed:
    results: list[np.ndarray]
    p50_ms: float
    p95_ms: float


def optional(name: str) -> Any:
    """A library compared here but not smem's dependency (untyped: its stubs vary by version)."""
    return importlib.import_module(name)


def timed(search: Callable[[np.ndarray], Any], queries: np.ndarray, repeats: int) -> Timed:
    """Each query alone; p50/p95 per pass, the median over passes; results of the first pass."""
    p50s, p95s, results = [], [], []
    for rep in range(repeats):
        times = np.empty(len(queries))
        for i, q in enumerate(queries):
            started = time.perf_counter()
            found = search(q)
            times[i] = time.perf_counter() - started
            if rep == 0:
                results.append(np.asarray(found, dtype=np.int64))
        p50s.append(float(np.percentile(times, 50)) * 1e3)
        p95s.append(float(np.percentile(times, 95)) * 1e3)
    return Timed(results, statistics.median(p50s), statistics.median(p95s))


@dataclass
class Case:
    """One size's vectors, queries, truths and the filter subset."""

    n: int
    real: int
    base: np.ndarray
    queries: np.ndarray
    truth: np.ndarray
    mask: np.ndarray
    filter_truth: np.ndarray
    exact_p50_ms: float = 0.0
    repeats: int = 3
    _half: np.ndarray | None = None

    def half(self) -> np.ndarray:
        if self._half is None:
            self._half = self.base.astype(np.float16)
        return self._half


@dataclass
class Line:
    fields: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        def show(value: Any) -> str:
            if isinstance(value, float):
                return f"{value:.3f}" if value < 100 else f"{value:.0f}"
            return str(value)

        return "ann " + " ".join(f"{k}={show(v)}" for k, v in self.fields.items())


@dataclass
class Built:
    """What building one index cost, shared by the lines of its search-time settings."""

    build_s: float
    mem_mb: float
    rss_mb: float
    save_s: float
    load_s: float
    load_view_s: float | str
    file_mb: float
    remove: str


def build_measured(make: Callable[[], Any]) -> tuple[Any, float, float]:
    gc.collect()
    before = rss()
    started = time.perf_counter()
    index = make()
    build_s = time.perf_counter() - started
    gc.collect()
    return index, build_s, (rss() - before) / 2**20


def speed(case: Case, t: Timed) -> dict[str, Any]:
    return {
        "p50_ms": t.p50_ms,
        "p95_ms": t.p95_ms,
        "x_exact": case.exact_p50_ms / t.p50_ms if t.p50_ms else 0.0,
    }


def costs(b: Built) -> dict[str, Any]:
    return {
        "build_s": b.build_s,
        "mem_mb": b.mem_mb,
        "rss_mb": b.rss_mb,
        "file_mb": b.file_mb,
        "save_s": b.save_s,
        "load_s": b.load_s,
        "load_view_s": b.load_view_s,
        "remove": b.remove,
    }


def filtered_scores(case: Case, t: Timed) -> dict[str, Any]:
    short = sum(len(r) < K for r in t.results) / len(t.results)
    return {
        "filt_recall@10": recall(t.results, case.filter_truth),
        "filt_short": short,
        "filt_p50_ms": t.p50_ms,
        "filt_p95_ms": t.p95_ms,
    }


def first_queries(case: Case, count: int) -> Case:
    """The case with its first `count` queries only (a slow filtered search runs on fewer)."""
    return Case(
        case.n,
        case.real,
        case.base,
        case.queries[:count],
        case.truth[:count],
        case.mask,
        case.filter_truth[:count],
    )


def make_case(
    base: np.ndarray, real: int, queries: np.ndarray, rng: np.random.Generator, repeats: int
) -> Case:
    mask = np.zeros(len(base), dtype=bool)
    mask[rng.permutation(len(base))[: int(len(base) * FILTER_FRACTION)]] = True
    return Case(
        n=len(base),
        real=min(real, len(base)),
        base=base,
        queries=queries,
        truth=exact_top(base, queries),
        mask=mask,
        filter_truth=exact_top(base, queries, mask),
        repeats=repeats,
    )
