"""Which row of an index holds each key (the store's seq), for millions of keys.

A dict of a million ints holds about 100 MB and takes a second to build at a load; two sorted
numpy arrays hold 16 MB and build in one argsort. Keys added since the arrays were last sorted
wait in a small dict, folded in once it grows. A key set again (a row added once more) moves to
its new row; the old entry is marked gone (-1), as is a removed one.
"""

from __future__ import annotations

import numpy as np

FOLD_AT = 65_536  # keys waiting in the dict before they are sorted into the arrays


class RowsByKey:
    def __init__(self) -> None:
        self._keys = np.zeros(0, np.int64)  # sorted
        self._rows = np.zeros(0, np.int64)  # aligned; -1: gone
        self._recent: dict[int, int] = {}
        self._count = 0

    @classmethod
    def from_column(cls, keys_by_row: np.ndarray) -> RowsByKey:
        """From an index's key column (row i holds key keys_by_row[i]; -1: removed). A key
        held by two rows maps to the later, as if it had been set twice."""
        index = cls()
        rows = np.flatnonzero(keys_by_row >= 0)
        order = np.argsort(keys_by_row[rows], kind="stable")
        keys, rows = keys_by_row[rows][order].astype(np.int64), rows[order]
        last = np.r_[keys[1:] != keys[:-1], True] if keys.size else np.zeros(0, bool)
        index._keys, index._rows, index._count = keys[last], rows[last], int(last.sum())
        return index

    def __len__(self) -> int:
        return self._count

    def get(self, key: int) -> int | None:
        row = self._recent.get(key)
        if row is not None:
            return row
        at = self._sorted_at(key)
        return None if at < 0 else int(self._rows[at])

    def set(self, key: int, row: int) -> None:
        if key in self._recent:
            self._count -= 1
        elif (at := self._sorted_at(key)) >= 0:
            self._rows[at] = -1
            self._count -= 1
        self._recent[key] = row
        self._count += 1
        if len(self._recent) >= FOLD_AT:
            self._fold()

    def pop(self, key: int) -> int | None:
        row = self._recent.pop(key, None)
        if row is None and (at := self._sorted_at(key)) >= 0:
            row, self._rows[at] = int(self._rows[at]), -1
        if row is not None:
            self._count -= 1
        return row

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row, or -1."""
        found = np.full(keys.size, -1, np.int64)
        if self._keys.size:
            at = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
            found = np.where(self._keys[at] == keys, self._rows[at], -1)
        if self._recent:
            waiting = np.fromiter(self._recent, np.int64, len(self._recent))
            for i in np.flatnonzero(np.isin(keys, waiting)).tolist():
                found[i] = self._recent[int(keys[i])]
        return found

    def _sorted_at(self, key: int) -> int:
        at = int(np.searchsorted(self._keys, key))
        if at < self._keys.size and self._keys[at] == key and self._rows[at] >= 0:
            return at
        return -1

    def _fold(self) -> None:
        kept = self._rows >= 0
        keys = np.concatenate([self._keys[kept], np.fromiter(self._recent, np.int64)])
        rows = np.concatenate([self._rows[kept], np.fromiter(self._recent.values(), np.int64)])
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], rows[order]
        self._recent.clear()
