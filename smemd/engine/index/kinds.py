"""The vectors and the words of one kind of row (memories or chunks), kept in step.

While a copy of them is being saved (in a thread, see saved.py), changes wait in a queue and are
applied when the save ends: searches go on meanwhile, and the file never mixes two moments.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from smemd.engine.index.ann import AnnIndex
from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.flat import EXACT_UP_TO, FlatIndex

ANN_FROM = 200_000  # rows of one kind past which its vectors are an HNSW graph


class KindIndex:
    __slots__ = ("_held", "_holds", "changes", "vectors", "words")

    def __init__(self, vectors: FlatIndex | AnnIndex, words: LexicalIndex) -> None:
        self.vectors = vectors
        self.words = words
        self.changes = 0  # since the last save: what makes another worth its cost
        self._held: list[Callable[[], None]] | None = None
        self._holds = 0

    @classmethod
    def empty(
        cls, dimension: int, capacity: int = 1024, *, exact_up_to: int = EXACT_UP_TO,
        graph: bool = False,
    ) -> KindIndex:  # fmt: skip
        """Room for `capacity` rows; the vectors a graph when `graph`."""
        vectors: FlatIndex | AnnIndex = (
            AnnIndex(dimension, capacity=capacity)
            if graph
            else FlatIndex(dimension, capacity, exact_up_to=exact_up_to)
        )
        return cls(vectors, LexicalIndex(capacity))

    @property
    def is_graph(self) -> bool:
        return isinstance(self.vectors, AnnIndex)

    def __len__(self) -> int:
        return len(self.vectors)

    @property
    def dimension(self) -> int:
        return self.vectors.dimension

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, live) of every row held, in key order."""
        return self.vectors.state()

    def add(
        self, keys: Sequence[int], vectors: np.ndarray, texts: Sequence[str], live: Sequence[bool]
    ) -> None:
        self._apply(lambda: self._add(keys, vectors, texts, live), len(keys))

    def set_live(self, key: int, live: bool) -> None:
        self._apply(lambda: self._set_live(key, live), 1)

    def remove(self, keys: Collection[int]) -> None:
        self._apply(lambda: self._remove(keys), len(keys))

    def hold(self) -> None:
        """Queue changes from now on (a save is reading the indexes); holds nest."""
        self._holds += 1
        if self._held is None:
            self._held = []

    def release(self) -> None:
        """End one hold; when none is left, apply the queued changes and stop queueing."""
        self._holds -= 1
        if self._holds > 0:
            return
        held, self._held = self._held or [], None
        for change in held:
            change()

    def _apply(self, change: Callable[[], None], count: int) -> None:
        self.changes += count
        if self._held is not None:
            self._held.append(change)
        else:
            change()

    def _add(
        self, keys: Sequence[int], vectors: np.ndarray, texts: Sequence[str], live: Sequence[bool]
    ) -> None:
        self.vectors.add(keys, vectors, live)
        self.words.add(keys, texts, live)

    def _set_live(self, key: int, live: bool) -> None:
        self.vectors.set_live(key, live)
        self.words.set_live(key, live)

    def _remove(self, keys: Collection[int]) -> None:
        self.vectors.remove(keys)
        self.words.remove(keys)
