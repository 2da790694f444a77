"""Approximate nearest neighbours for a large namespace: an HNSW graph (usearch) of int8 codes
behind `VectorIndex`, with the keys and the live mask kept beside it in numpy, and the float16
vectors its candidates are re-scored on (rescoring.py) on disk.

Every row stays in the graph, live or not (a forgotten memory is restored by flipping its
bit, with no vector to find again); only a hard delete removes one. A search asks the graph for
more than it needs, keeps the live rows (or those in `among`), and asks again deeper when too
few survive; past a depth it scores every row it may return instead, on the graph's own codes
a chunk at a time. A filter that keeps few rows (`among` below `EXACT_AMONG`) is scored that
way from the start: the graph cannot be walked within it.

The codes' cosines are off by a few thousandths, so the best `k + max(k, RESCORE_MARGIN)` by
them are scored again on the float16 vectors: a search returns the same cosines the flat index
gives (within 1e-3), and `cosines` reads them too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from usearch.index import Index

from smemd.engine.index.flat import normalise
from smemd.engine.index.rescoring import ExactVectors

CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 96
DTYPE = "i8"
EXACT_AMONG = 20_000  # a filter keeping this few rows is scanned, not walked
MAX_FETCH = 4096  # deeper than this, a scan is as quick and surely right
SCORE_CHUNK = 16_384  # codes read at a time by a scan
RESCORE_MARGIN = 32  # candidates past k re-scored on float16: the codes swap near-ties
BULK_THREADS = os.cpu_count() or 1


def _usearch() -> type[Index]:
    """usearch, loaded with the first graph: a daemon without one does not carry it (15 MB)."""
    # onnxruntime (the embedder's) must be loaded before usearch: the other order crashes the
    # process as onnxruntime loads. The embedder imports it anyway; here the order is made sure.
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401

    from usearch.index import Index as Loaded

    return Loaded


class AnnIndex:
    def __init__(
        self, dimension: int, graph: Index | None = None, exact: ExactVectors | None = None,
        capacity: int = 0,
    ) -> None:  # fmt: skip
        """`capacity`: the rows a build is about to add."""
        self.dimension = dimension
        self._exact = exact or ExactVectors(dimension, capacity)
        self._graph = graph or _usearch()(
            ndim=dimension, metric="cos", dtype=DTYPE, connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
        )  # fmt: skip
        self._keys = np.zeros(0, dtype=np.int64)  # sorted
        self._live = np.zeros(0, dtype=bool)  # aligned with _keys

    def __len__(self) -> int:
        return int(self._keys.size)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, live): what a saved index records beside its graph."""
        return self._keys, self._live

    @classmethod
    def restored(
        cls, dimension: int, graph_path: Path, exact_path: Path, keys: np.ndarray,
        live: np.ndarray,
    ) -> AnnIndex:  # fmt: skip
        """From a saved graph (read whole: a memory-mapped one cannot take additions), its
        float16 vectors, and the keys and live mask saved beside it; ValueError when they do not
        fit together."""
        try:
            graph = _usearch().restore(str(graph_path), view=False)
        except (RuntimeError, OSError) as err:
            raise ValueError(f"the graph did not load: {err}") from err
        if graph is None or graph.ndim != dimension or len(graph) != keys.size:
            raise ValueError("the graph does not match its keys")
        if str(graph.dtype) != f"ScalarKind.{DTYPE.upper()}":
            raise ValueError(f"the graph holds {graph.dtype}, not {DTYPE}")
        keys = keys.astype(np.int64)
        index = cls(dimension, graph, ExactVectors.opened(dimension, exact_path, keys))
        index._keys, index._live = keys, live.astype(bool)
        return index

    def save_graph(self, path: Path) -> None:
        self._graph.save(str(path))

    def save_exact(self, path: Path) -> None:
        """The float16 vectors of every key, which are then read from that file."""
        self._exact.save(path, self._keys)

    def add(self, keys: Sequence[int], vectors: np.ndarray, live: Sequence[bool]) -> None:
        if len(keys) == 0:
            return
        new = np.asarray(keys, dtype=np.int64)
        if len(live) != new.size:  # the live mask would no longer line up with the keys
            raise ValueError(f"{new.size} keys but {len(live)} live flags")
        present = self._positions(new) >= 0
        if present.any():  # a row added again (a reload racing a write): replace it
            self.remove(new[present].tolist())
        rows = normalise(np.asarray(vectors, dtype=np.float32).reshape(len(new), self.dimension))
        # A load's pages are built on every core (in a thread, off the loop); ingest's few rows
        # on one, beside the searches.
        threads = BULK_THREADS if new.size >= 1000 else 1
        self._graph.add(new.astype(np.uint64), rows, threads=threads)
        self._exact.add(new, rows)
        keys_ = np.concatenate([self._keys, new])
        live_ = np.concatenate([self._live, np.asarray(live, dtype=bool)])
        tail = keys_[self._keys.size - 1 :] if self._keys.size else keys_
        if tail.size > 1 and np.any(tail[1:] <= tail[:-1]):  # seqs mostly come in order
            order = np.argsort(keys_, kind="stable")
            keys_, live_ = keys_[order], live_[order]
        self._keys, self._live = keys_, live_

    def set_live(self, key: int, live: bool) -> None:
        at = self._positions(np.array([key], dtype=np.int64))[0]
        if at >= 0:
            self._live[at] = live

    def remove(self, keys: Collection[int]) -> None:
        asked = np.fromiter(keys, dtype=np.int64, count=len(keys))
        at = self._positions(asked)
        gone = at[at >= 0]
        if gone.size == 0:
            return
        self._graph.remove(self._keys[gone].astype(np.uint64))
        self._keys = np.delete(self._keys, gone)
        self._live = np.delete(self._live, gone)

    def search(
        self, query: np.ndarray, k: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (key, cosine), best first, over live rows or over the keys in `among`."""
        if k <= 0 or self._keys.size == 0:
            return []
        q = normalise(np.asarray(query, dtype=np.float32).reshape(1, self.dimension))[0]
        if among is None:
            allowed = None
            share = max(float(np.count_nonzero(self._live)) / self._live.size, 1e-3)
        else:
            allowed = np.unique(np.fromiter(among, dtype=np.int64, count=len(among)))
            allowed = allowed[self._positions(allowed) >= 0]
            if allowed.size <= max(EXACT_AMONG, k):
                return self._scanned(q, allowed, k)
            share = allowed.size / self._keys.size
        fetch = min(int(k / share * 1.5) + 16, self._keys.size)
        while True:
            found = self._graph.search(q, fetch, threads=1)
            keys = np.asarray(found.keys, dtype=np.int64)
            kept = keys[self._keeps(keys, allowed)]  # nearest first
            if kept.size >= k or fetch >= self._keys.size:
                return self._rescored(q, kept[: k + max(k, RESCORE_MARGIN)], k)
            if fetch >= MAX_FETCH:
                every = self._keys[self._live] if allowed is None else allowed
                return self._scanned(q, every, k)
            fetch = min(fetch * 4, MAX_FETCH, self._keys.size)

    def cosines(self, query: np.ndarray, keys: Sequence[int]) -> list[float]:
        """The cosine of each key's vector with `query` (0.0 for a key not in the index)."""
        q = normalise(np.asarray(query, dtype=np.float32).reshape(1, self.dimension))[0]
        asked = np.asarray(keys, dtype=np.int64)
        present = asked[self._positions(asked) >= 0]
        exact = normalise(self._exact.get(present)) @ q
        scores = dict(zip(present.tolist(), exact.tolist(), strict=True))
        return [scores.get(int(key), 0.0) for key in asked]

    def _keeps(self, keys: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
        at = self._positions(keys)
        ok = at >= 0
        ok[ok] = self._live[at[ok]] if allowed is None else True
        if allowed is not None:
            ok &= _in_sorted(allowed, keys)
        return ok

    def _scanned(self, q: np.ndarray, keys: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The best `k` of `keys`: scored on the graph's codes a chunk at a time (a scan over a
        large filter must not copy every vector at once), the best of those then re-scored."""
        depth = k + max(k, RESCORE_MARGIN)
        best_keys, best_scores = np.zeros(0, np.int64), np.zeros(0, np.float32)
        for start in range(0, keys.size, SCORE_CHUNK):
            chunk = keys[start : start + SCORE_CHUNK]
            best_keys = np.concatenate([best_keys, chunk])
            best_scores = np.concatenate([best_scores, self._codes(chunk) @ q])
            if best_scores.size > depth:
                top = np.argpartition(-best_scores, depth - 1)[:depth]
                best_keys, best_scores = best_keys[top], best_scores[top]
        return self._rescored(q, best_keys, k)

    def _rescored(self, q: np.ndarray, keys: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The best `k` of a few candidates by their float16 cosines, best first."""
        scores = normalise(self._exact.get(keys)) @ q if keys.size else np.zeros(0, np.float32)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(int(keys[i]), float(scores[i])) for i in order]

    def _codes(self, keys: np.ndarray) -> np.ndarray:
        """The graph's own (int8) rows for `keys`, as unit float32 vectors."""
        if keys.size == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        got: Any = self._graph.get(keys.astype(np.uint64), dtype="f32")  # a tuple of rows
        rows = np.stack(got) if isinstance(got, tuple) else np.asarray(got)
        return normalise(rows.reshape(keys.size, self.dimension).astype(np.float32))

    def _positions(self, keys: np.ndarray) -> np.ndarray:
        """Each key's position in `_keys`, or -1."""
        at = np.searchsorted(self._keys, keys)
        at[at >= self._keys.size] = 0
        found = self._keys.size > 0
        hit = (self._keys[at] == keys) if found else np.zeros(keys.size, dtype=bool)
        return np.where(hit, at, -1)


def _in_sorted(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    at = np.searchsorted(sorted_keys, keys)
    at[at >= sorted_keys.size] = 0
    return sorted_keys[at] == keys if sorted_keys.size else np.zeros(keys.size, dtype=bool)
