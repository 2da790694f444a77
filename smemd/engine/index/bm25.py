"""BM25 over one namespace's texts, in memory: postings per term, scored with numpy.

SQLite's FTS5 computes bm25() row by row through its auxiliary-function API, about a
microsecond per matching row: 8 ms for a common word at 100k memories. Here a query gathers
each term's postings and scores them in a few array operations. The statistics (document
count, lengths, document frequencies) are the namespace's own, as a reader of one namespace
expects, and the formula is FTS5's (k1 = 1.2, b = 0.75, idf floored at 1e-6).

Postings live in one compressed array per index (term → slice), rebuilt when the recent
postings kept beside it grow past a quarter of it; removed rows are dropped at that rebuild.
Keys are the store's row numbers (seq), as in `vectors`. `save` and `load` keep the postings
on disk (`lexical_files`), so a restart need not tokenise every row again.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from smemd.engine.index import lexical_files
from smemd.engine.index.rows_by_key import RowsByKey
from smemd.engine.index.words import tokens

K1 = 1.2
B = 0.75


class LexicalIndex:
    def __init__(self, capacity: int = 1024) -> None:
        self._keys = np.full(capacity, -1, dtype=np.int64)  # -1: removed
        self._live = np.zeros(capacity, dtype=bool)
        self._length = np.zeros(capacity, dtype=np.float32)  # tokens per row
        self._size = 0
        self._row = RowsByKey()
        self._term_ids: dict[str, int] = {}
        # The compressed postings: term t's rows are _rows[_start[t]:_start[t + 1]].
        self._start = np.zeros(1, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int32)
        self._tf = np.zeros(0, dtype=np.float32)
        # Term id -> row, tf, row, tf, ... since then: flat machine ints, not a tuple per posting.
        self._recent: dict[int, array[int]] = {}
        self._recent_count = 0
        self._total_length = 0.0

    def __len__(self) -> int:
        return len(self._row)

    def add(self, keys: Sequence[int], texts: Sequence[str], live: Sequence[bool]) -> None:
        self._reserve(self._size + len(keys))
        for key, text, is_live in zip(keys, texts, live, strict=True):
            row = self._size
            self._size += 1
            words = tokens(text)
            self._keys[row], self._live[row], self._length[row] = key, is_live, len(words)
            self._row.set(int(key), row)
            self._total_length += len(words)
            for word, tf in Counter(words).items():
                term = self._term_ids.setdefault(word, len(self._term_ids))
                self._recent.setdefault(term, array("l")).extend((row, tf))
                self._recent_count += 1
        if self._recent_count > max(4096, self._rows.size // 4):
            self._rebuild()

    def set_live(self, key: int, live: bool) -> None:
        row = self._row.get(key)
        if row is not None:
            self._live[row] = live

    def remove(self, keys: Collection[int]) -> None:
        for key in keys:
            row = self._row.pop(key)
            if row is not None:
                self._keys[row], self._live[row] = -1, False
                self._total_length -= float(self._length[row])
        if self._size > 1024 and len(self._row) < self._size // 2:
            self._rebuild()

    def save(self, directory: Path) -> None:
        """Write the postings compacted (recent folded in, removed rows dropped). The index
        itself is left as it is, so a save in a thread may run beside searches."""
        lexical_files.write(directory, self._compacted())

    @classmethod
    def load(cls, directory: Path) -> LexicalIndex:
        """The index last saved in `directory`; `IndexFileError` if it is missing or damaged."""
        saved = lexical_files.read(directory)
        size = saved.keys.size
        index = cls(max(size, 1024))
        index._keys[:size], index._live[:size], index._length[:size] = (
            saved.keys, saved.live, saved.length
        )  # fmt: skip
        index._size = size
        index._row = RowsByKey.from_column(saved.keys)
        index._term_ids = dict(zip(saved.terms, range(len(saved.terms)), strict=True))
        index._start, index._rows, index._tf = saved.start, saved.rows, saved.tf
        index._total_length = float(saved.length.sum(dtype=np.float64))  # whole token counts
        return index

    def search(
        self, terms: Sequence[str], k: int, among: Collection[int] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (key, BM25 score), best first, over live rows or over the keys in `among`."""
        present = len(self._row)
        if k <= 0 or present == 0:
            return []
        average = max(self._total_length / present, 1e-9)
        rows_of: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for word in terms:
            term = self._term_ids.get(word)
            if term is None:
                continue
            rows, tf = self._postings(term)
            kept = self._keys[rows] >= 0
            rows, tf = rows[kept], tf[kept]
            if rows.size == 0:
                continue
            idf = max(math.log((present - rows.size + 0.5) / (rows.size + 0.5)), 1e-6)
            norm = K1 * (1 - B + B * self._length[rows] / average)
            rows_of.append(rows)
            weights.append(idf * tf * (K1 + 1) / (tf + norm))
        if not rows_of:
            return []
        rows, inverse = np.unique(np.concatenate(rows_of), return_inverse=True)
        scores = np.bincount(inverse, weights=np.concatenate(weights))
        if among is None:
            visible = self._live[rows]
        else:
            allowed = self._row.rows(np.fromiter(among, np.int64, len(among)))
            allowed = allowed[allowed >= 0]
            visible = np.isin(rows, allowed)
        rows, scores = rows[visible], scores[visible]
        k = min(k, rows.size)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self._keys[rows[i]]), float(scores[i])) for i in top]

    def _postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        rows, tf = self._rows[:0], self._tf[:0]
        if term + 1 < self._start.size:  # a term first seen since the last rebuild has no slice
            begin, end = int(self._start[term]), int(self._start[term + 1])
            rows, tf = self._rows[begin:end], self._tf[begin:end]
        recent = self._recent.get(term)
        if recent:
            pairs = np.frombuffer(recent, dtype=np.int_).reshape(-1, 2)
            rows = np.concatenate([rows, pairs[:, 0].astype(np.int32)])
            tf = np.concatenate([tf, pairs[:, 1].astype(np.float32)])
        return rows, tf

    def _rebuild(self) -> None:
        """Fold the recent postings into the compressed arrays, dropping removed rows, and
        close the holes removed rows left once they are half of all rows (or any, if `compact`)."""
        all_terms, all_rows, all_tf = self._all_postings()
        kept = self._keys[all_rows] >= 0
        all_terms, all_rows, all_tf = all_terms[kept], all_rows[kept], all_tf[kept]
        if self._size > 1024 and len(self._row) < self._size // 2:
            all_rows = self._compact()[all_rows]
        order = np.lexsort((all_rows, all_terms))
        self._rows = all_rows[order].astype(np.int32)
        self._tf = all_tf[order]
        per_term = np.bincount(all_terms, minlength=len(self._term_ids))
        self._start = np.concatenate([[0], np.cumsum(per_term)]).astype(np.int64)
        self._recent.clear()
        self._recent_count = 0

    def _all_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(term, row, tf) of every posting, compressed and recent, removed rows included."""
        counts = np.diff(self._start)
        terms = [np.repeat(np.arange(counts.size, dtype=np.int64), counts)]
        rows, tf = [self._rows.astype(np.int64)], [self._tf]
        for term, recent in self._recent.items():
            pairs = np.frombuffer(recent, dtype=np.int_).reshape(-1, 2)
            terms.append(np.full(len(pairs), term, dtype=np.int64))
            rows.append(pairs[:, 0].astype(np.int64))
            tf.append(pairs[:, 1].astype(np.float32))
        all_terms, all_rows, all_tf = (
            np.concatenate(terms),
            np.concatenate(rows),
            np.concatenate(tf),
        )
        return all_terms, all_rows, all_tf

    def _compacted(self) -> lexical_files.Postings:
        """The postings as a fresh compact copy: present rows renumbered from 0, terms sorted."""
        all_terms, all_rows, all_tf = self._all_postings()
        kept = self._keys[all_rows] >= 0
        present = np.flatnonzero(self._keys[: self._size] >= 0)
        moved = np.full(self._size, -1, dtype=np.int64)
        moved[present] = np.arange(present.size)
        all_terms, all_rows, all_tf = all_terms[kept], moved[all_rows[kept]], all_tf[kept]
        order = np.lexsort((all_rows, all_terms))
        per_term = np.bincount(all_terms, minlength=len(self._term_ids))
        return lexical_files.Postings(
            self._keys[present], self._live[present], self._length[present],
            np.concatenate([[0], np.cumsum(per_term)]).astype(np.int64),
            all_rows[order].astype(np.int32), all_tf[order], list(self._term_ids),
        )  # fmt: skip

    def _compact(self) -> np.ndarray:
        """Move the present rows to the front; return each old row's new number."""
        keep = np.flatnonzero(self._keys[: self._size] >= 0)
        moved = np.full(self._size, -1, dtype=np.int64)
        moved[keep] = np.arange(keep.size)
        for column in (self._keys, self._live, self._length):
            column[: keep.size] = column[keep]
        self._keys[keep.size :], self._live[keep.size :], self._length[keep.size :] = -1, False, 0
        self._size = int(keep.size)
        self._row = RowsByKey.from_column(self._keys[: self._size])
        return moved

    def _reserve(self, needed: int) -> None:
        capacity = self._keys.size
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        grow = capacity - self._keys.size
        self._keys = np.concatenate([self._keys, np.full(grow, -1, np.int64)])
        self._live = np.concatenate([self._live, np.zeros(grow, bool)])
        self._length = np.concatenate([self._length, np.zeros(grow, np.float32)])
