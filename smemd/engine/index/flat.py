"""Nearest neighbours over one namespace's vectors: a flat matrix, scanned in one product.

Behind `VectorIndex` so an ANN index can replace it without the engine noticing. Keys are the
store's row numbers (seq). Rows are L2-normalised, so a dot product is the cosine.

Up to `exact_up_to` rows the scan is exact, over float32. Past it the index scans a reduced
projection first (`reduction`) and re-scores the best `RESCORE` rows exactly; the full vectors
are then only gathered, never scanned, so they are kept as float16 (cosines within 1e-3).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from smemd.engine.index.heap import release_freed_memory
from smemd.engine.index.reduction import Reduction

EXACT_UP_TO = 20_000
RESCORE = 800


class VectorIndex(Protocol):
    def __len__(self) -> int: ...
    def add(self, keys: Sequence[int], vectors: np.ndarray, live: Sequence[bool]) -> None: ...
    def set_live(self, key: int, live: bool) -> None: ...
    def remove(self, keys: Collection[int]) -> None: ...
    def search(
        self, query: np.ndarray, k: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]: ...
    def cosines(self, query: np.ndarray, keys: Sequence[int]) -> list[float]: ...


class FlatIndex:
    """All vectors in one growing matrix; `live` rows are what a search sees unless `among` is given."""

    def __init__(
        self, dimension: int, capacity: int = 1024, *, exact_up_to: int = EXACT_UP_TO
    ) -> None:
        self.dimension = dimension
        self.exact_up_to = exact_up_to
        self._reduction: Reduction | None = None
        # An index loaded past the limit never scans its full vectors: float16 from the start.
        dtype = np.float16 if capacity > exact_up_to else np.float32
        self._vectors = np.zeros((capacity, dimension), dtype=dtype)
        self._keys = np.full(capacity, -1, dtype=np.int64)
        self._live = np.zeros(capacity, dtype=bool)
        self._size = 0  # rows used, holes included
        self._row: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def add(self, keys: Sequence[int], vectors: np.ndarray, live: Sequence[bool]) -> None:
        if len(keys) == 0:
            return
        vectors = normalise(
            np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dimension)
        )
        self._reserve(self._size + len(keys))
        rows = np.arange(self._size, self._size + len(keys))
        self._vectors[rows] = vectors
        self._keys[rows] = keys
        self._live[rows] = live
        self._row.update(zip((int(k) for k in keys), rows.tolist(), strict=True))
        self._size += len(keys)
        if self._reduction is not None:
            if self._size >= 2 * self._reduction.fitted_rows:
                self._reduction = None  # refitted at the next search, on rows that now dominate
            else:
                self._reduction.project(self._vectors, int(rows[0]), self._size)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, live) of every row held, in key order."""
        present = np.flatnonzero(self._keys[: self._size] >= 0)
        order = present[np.argsort(self._keys[present], kind="stable")]
        return self._keys[order], self._live[order]

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, vectors, live) of every row held, for a graph to be built from."""
        present = np.flatnonzero(self._keys[: self._size] >= 0)
        return self._keys[present], self._vectors[present], self._live[present]

    def set_live(self, key: int, live: bool) -> None:
        row = self._row.get(key)
        if row is not None:
            self._live[row] = live

    def remove(self, keys: Collection[int]) -> None:
        for key in keys:
            row = self._row.pop(key, None)
            if row is not None:
                self._live[row] = False
                self._keys[row] = -1
        if self._size > 1024 and len(self._row) < self._size // 2:
            self._compact()

    def search(
        self, query: np.ndarray, k: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (key, cosine), best first, over live rows or over the keys in `among`."""
        if k <= 0 or not self._row:
            return []
        q = normalise(np.asarray(query, dtype=np.float32).reshape(1, self.dimension))[0]
        if among is None and self._size <= self.exact_up_to and self._vectors.dtype == np.float32:
            scores = self._vectors[: self._size] @ q
            scores[~self._live[: self._size]] = -np.inf
            keys = self._keys[: self._size]
        elif among is None:
            rows = self._first_pass(q, max(k, RESCORE))
            scores = self._gather(rows) @ q
            keys = self._keys[rows]
        else:
            rows = np.fromiter(
                (self._row[key] for key in among if key in self._row), dtype=np.int64
            )
            if rows.size == 0:
                return []
            scores = self._gather(rows) @ q
            keys = self._keys[rows]
        k = min(k, scores.size)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(keys[i]), float(scores[i])) for i in top if scores[i] > -np.inf]

    def cosines(self, query: np.ndarray, keys: Sequence[int]) -> list[float]:
        """The cosine of each key's vector with `query` (0.0 for a key not in the index)."""
        q = normalise(np.asarray(query, dtype=np.float32).reshape(1, self.dimension))[0]
        rows = [self._row.get(key, -1) for key in keys]
        present = [row for row in rows if row >= 0]
        scores = iter((self._gather(np.array(present)) @ q).tolist()) if present else iter(())
        return [next(scores) if row >= 0 else 0.0 for row in rows]

    def _first_pass(self, query: np.ndarray, depth: int) -> np.ndarray:
        """The live rows the reduced scan ranks best: candidates for the exact score."""
        if self._reduction is None:
            # From here on the full vectors are only gathered: half the memory, as float16.
            self._vectors = self._vectors.astype(np.float16, copy=False)
            self._reduction = Reduction(self._vectors, self._size, self._vectors.shape[0])
            release_freed_memory()
        scores = self._reduction.scores(query, self._size)
        scores[~self._live[: self._size]] = -np.inf
        rows = best_rows(scores, depth)
        return rows[scores[rows] > -np.inf]

    def _gather(self, rows: np.ndarray) -> np.ndarray:
        return self._vectors[rows].astype(np.float32, copy=False)

    def _reserve(self, needed: int) -> None:
        capacity = self._vectors.shape[0]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        self._vectors = _grow(self._vectors, capacity)
        self._keys = np.concatenate([self._keys, np.full(capacity - self._keys.size, -1, np.int64)])
        self._live = np.concatenate([self._live, np.zeros(capacity - self._live.size, bool)])

    def _compact(self) -> None:
        keep = np.flatnonzero(self._keys[: self._size] >= 0)
        n = keep.size
        self._vectors[:n] = self._vectors[keep]
        self._keys[:n] = self._keys[keep]
        self._live[:n] = self._live[keep]
        self._keys[n:] = -1
        self._live[n:] = False
        self._size = n
        self._row = {int(key): row for row, key in enumerate(self._keys[:n].tolist())}
        self._reduction = None  # rows moved: refitted at the next search


def best_rows(scores: np.ndarray, depth: int) -> np.ndarray:
    """The rows of the `depth` highest scores, in no order.

    A full argpartition of 100k scores takes a millisecond; a cut-off estimated from every
    16th score, with room to spare, leaves a few thousand to partition instead.
    """
    if scores.size <= 16 * depth:
        return np.argpartition(-scores, min(depth, scores.size) - 1)[:depth]
    sample = scores[::16]
    margin = min(sample.size, 2 * depth // 16 + 8)
    cut = np.partition(sample, sample.size - margin)[sample.size - margin]
    rows = np.flatnonzero(scores >= cut)
    if rows.size < depth:  # an unlucky sample: fall back to the full partition
        return np.argpartition(-scores, depth - 1)[:depth]
    return rows[np.argpartition(-scores[rows], depth - 1)[:depth]]


def normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def _grow(matrix: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, matrix.shape[1]), dtype=matrix.dtype)
    grown[: matrix.shape[0]] = matrix
    return grown
