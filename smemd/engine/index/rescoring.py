"""The float16 vectors an int8 graph's candidates are re-scored on, kept out of memory.

A graph of int8 codes holds a 1M-row namespace in about 0.6 GB where float16 would take 1 GB,
but its cosines are off by a few thousandths, enough to swap near-ties in a top 10. So the
graph finds candidates and these vectors give the cosines. They live in the file the last save
wrote (`base`: one row per saved key, in key order), read a row at a time with `pread` so they
stay in the page cache, not in the daemon's memory, plus the rows added since (`tail`, in
memory until the next save moves them into a new file). Before a first save (a graph being
built from the store) every row is in the tail.

Changes happen on one thread at a time (the loop, or a load before the index is published);
a save runs in a thread while they wait, and ends by swapping in the file it wrote: searches
read whichever `_Rows` they found, and both are whole.
"""

from __future__ import annotations

import mmap
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DTYPE = np.dtype("<f2")
SAVE_CHUNK = 65_536  # rows gathered at a time while a save writes its file


@dataclass(slots=True, weakref_slot=True)
class _Rows:
    """One moment's rows: a save swaps in a new one whole, so a search reads one or the other.
    The base file's descriptor is closed when the last reader lets go of it."""

    dimension: int
    base: int | None = None  # a descriptor
    base_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # sorted
    tail: np.ndarray | None = None
    tail_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # as added
    tail_size: int = 0
    tail_order: np.ndarray | None = None  # argsort of the tail's keys, once asked

    @classmethod
    def over(cls, dimension: int, path: Path, keys: np.ndarray) -> _Rows:
        descriptor = os.open(path, os.O_RDONLY)
        rows = cls(dimension, descriptor, keys)
        weakref.finalize(rows, os.close, descriptor)
        return rows

    def in_tail(self, keys: np.ndarray) -> np.ndarray:
        """Each key's newest row in the tail (a key added again has a later row), or -1."""
        if self.tail_size == 0:
            return np.full(keys.size, -1, np.int64)
        tail_keys = self.tail_keys[: self.tail_size]
        if self.tail_order is None:
            self.tail_order = np.argsort(tail_keys, kind="stable")
        ordered = tail_keys[self.tail_order]
        at = np.maximum(np.searchsorted(ordered, keys, side="right") - 1, 0)
        return np.where(ordered[at] == keys, self.tail_order[at], -1)

    def in_base(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row in the base file, or -1."""
        if self.base_keys.size == 0:
            return np.full(keys.size, -1, np.int64)
        at = np.minimum(np.searchsorted(self.base_keys, keys), self.base_keys.size - 1)
        return np.where(self.base_keys[at] == keys, at, -1)


class ExactVectors:
    def __init__(self, dimension: int, capacity: int = 0) -> None:
        """`capacity`: rows a build will add (reserved, not yet touched: no copy as it grows)."""
        self.dimension = dimension
        self._row_bytes = dimension * DTYPE.itemsize
        self._rows = _Rows(dimension)
        if capacity:
            self._rows.tail = np.zeros((capacity, dimension), DTYPE)
            self._rows.tail_keys = np.zeros(capacity, np.int64)

    @classmethod
    def opened(cls, dimension: int, path: Path, keys: np.ndarray) -> ExactVectors:
        """Over a file `save` wrote for these keys; ValueError when its size does not fit."""
        vectors = cls(dimension)
        if path.stat().st_size != keys.size * vectors._row_bytes:
            raise ValueError(f"{path.name}: not {keys.size} rows of {dimension} float16")
        vectors._rows = _Rows.over(dimension, path, keys)
        return vectors

    def add(self, keys: np.ndarray, unit_rows: np.ndarray) -> None:
        rows = self._rows
        end = rows.tail_size + keys.size
        if rows.tail is None or end > rows.tail.shape[0]:
            room = max(end, rows.tail_keys.size * 5 // 4, 1024)  # a quarter more: amortised
            rows.tail = _grown(rows.tail, room, self.dimension)
            rows.tail_keys = _grown(rows.tail_keys, room)
        rows.tail[rows.tail_size : end] = unit_rows
        rows.tail_keys[rows.tail_size : end] = keys
        rows.tail_size = end
        rows.tail_order = None

    def get(self, keys: np.ndarray) -> np.ndarray:
        """Float32 rows for `keys` (zeros for a key never added)."""
        rows = self._rows
        out = np.zeros((keys.size, self.dimension), np.float32)
        in_tail = rows.in_tail(keys)
        if rows.tail is not None:
            out[in_tail >= 0] = rows.tail[in_tail[in_tail >= 0]]
        in_base = np.where(in_tail < 0, rows.in_base(keys), -1)
        if rows.base is not None:
            for i in np.flatnonzero(in_base >= 0).tolist():
                raw = os.pread(rows.base, self._row_bytes, int(in_base[i]) * self._row_bytes)
                out[i] = np.frombuffer(raw, DTYPE)
        return out

    def save(self, path: Path, keys: np.ndarray) -> None:
        """Write the rows of `keys` (the graph's, sorted) to `path`, then read from that file
        with an empty tail. Run while nothing changes (the index is held)."""
        rows = self._rows
        # Mapped in the save's thread only, and unmapped after: its pages leave with it.
        whole = None
        if rows.base is not None and rows.base_keys.size:
            whole = mmap.mmap(rows.base, 0, access=mmap.ACCESS_READ)
        mapped = None
        try:
            if whole is not None:
                mapped = np.frombuffer(whole, DTYPE).reshape(-1, self.dimension)
            with path.open("wb") as out:
                for start in range(0, keys.size, SAVE_CHUNK):
                    out.write(self._block(rows, mapped, keys[start : start + SAVE_CHUNK]))
        finally:
            mapped = None  # the map closes only once no array looks into it
            if whole is not None:
                whole.close()
        self._rows = _Rows.over(self.dimension, path, keys.copy())

    def _block(self, rows: _Rows, mapped: np.ndarray | None, keys: np.ndarray) -> bytes:
        block = np.zeros((keys.size, self.dimension), DTYPE)
        in_tail = rows.in_tail(keys)
        if rows.tail is not None:
            block[in_tail >= 0] = rows.tail[in_tail[in_tail >= 0]]
        in_base = np.where(in_tail < 0, rows.in_base(keys), -1)
        if mapped is not None:
            block[in_base >= 0] = mapped[in_base[in_base >= 0]]
        return block.tobytes()


def _grown(array: np.ndarray | None, rows: int, dimension: int = 0) -> np.ndarray:
    if array is None:
        return np.zeros((rows, dimension), DTYPE)
    grown = np.zeros((rows, *array.shape[1:]), array.dtype)
    grown[: array.shape[0]] = array
    return grown
