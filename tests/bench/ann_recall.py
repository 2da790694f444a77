"""Recall of smem's large-namespace vector index against the exact search, on real MiniLM
vectors, as the index grows.

The index is `AnnIndex` itself (the int8 graph, its over-fetch and the float16 re-scoring), fed
LoCoMo dev's texts: turns, their sentences, captions, observations, summaries, runs of 2 and 3
turns, and runs of 2 to 4 sentences of a session: about 61k distinct real texts (no padded
copies: copies make near-ties that measure nothing). Queries are 1,000 LoCoMo questions, never in the index. At each size, recall@10
is the share of the exact float32 top 10 the index returns:

- `recall@10`: unfiltered, all rows live;
- `filt10`: among a random 10 % of rows, as smem searches them at this size (a filter keeping
  fewer than `EXACT_AMONG` rows is scanned on the graph's codes, then re-scored);
- `walk10`: the same filter with the scan turned off, so the graph is walked and over-fetched as
  it is for a 10 % filter past 200k rows;
- `p95_ms`: one unfiltered search at a time.

One line, comparable run to run:

  ann_recall n=10000 recall@10=… filt10=… walk10=… p95_ms=… | n=25000 … | n=50000 …

    python -m tests.bench.ann_recall [--data PATH] [--cache DIR] [--sizes 10000,25000,50000]

Target: recall@10 >= 0.98, unfiltered and with the 10 % filter. Embeddings are cached (as in
`ann_choice`): the first run embeds them with the builtin MiniLM (minutes on 2 cores).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one query at a time on one core, as smemd searches

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from smemd.engine.index import ann as ann_module  # noqa: E402
from smemd.engine.index.ann import AnnIndex  # noqa: E402
from tests.bench.ann_vectors import data_arguments, exact_top, real_vectors  # noqa: E402

K = 10
SENTENCE_RUNS = (2, 3, 4)


def recall(index: AnnIndex, queries: np.ndarray, truth: np.ndarray, keys: np.ndarray,
           among: set[int] | None = None) -> tuple[float, list[float]]:  # fmt: skip
    """Mean recall@K against `truth` (row numbers), and each search's milliseconds."""
    hits, times = 0, []
    for q, best in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = index.search(q, K, among)
        times.append((time.perf_counter() - started) * 1000)
        hits += len({key for key, _ in found} & set(keys[best].tolist()))
    return hits / truth.size, times


def measure(base: np.ndarray, queries: np.ndarray, rng: np.random.Generator) -> str:
    n = len(base)
    keys = np.arange(n, dtype=np.int64) + 1
    index = AnnIndex(base.shape[1], capacity=n)
    for start in range(0, n, 4096):  # pages, as a build adds them
        page = keys[start : start + 4096]
        index.add(page.tolist(), base[start : start + 4096], [True] * page.size)
    plain, times = recall(index, queries, exact_top(base, queries), keys)
    mask = rng.random(n) < 0.10
    among = set(keys[mask].tolist())
    truth = exact_top(base, queries, mask)
    filtered, _ = recall(index, queries, truth, keys, among)
    scan_up_to = ann_module.EXACT_AMONG
    ann_module.EXACT_AMONG = 0  # walk the graph, as for a 10 % filter of a million rows
    try:
        walked, _ = recall(index, queries, truth, keys, among)
    finally:
        ann_module.EXACT_AMONG = scan_up_to
    p95 = float(np.percentile(times, 95))
    return f"n={n} recall@10={plain:.3f} filt10={filtered:.3f} walk10={walked:.3f} p95_ms={p95:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data_arguments(parser)
    args = parser.parse_args()
    real, queries, rng = real_vectors(args, SENTENCE_RUNS)
    sizes = [n for n in (int(s) for s in args.sizes.split(",")) if n <= len(real)]
    print(f"# real texts={len(real)} queries={len(queries)}", flush=True)
    print("ann_recall " + " | ".join(measure(real[:n], queries, rng) for n in sizes))


if __name__ == "__main__":
    main()
