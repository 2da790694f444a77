"""One namespace's in-memory indexes, vectors and words per kind, loaded from the store on first use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence

import numpy as np

from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.heap import release_freed_memory
from smemd.engine.index.vectors import EXACT_UP_TO, FlatIndex
from smemd.store import deadline
from smemd.store.api import Reader, Store
from smemd.store.records import IndexRows
from smemd.store.vectors import stack

LOAD_PAGE = 4096
Page = Callable[[Reader, int], Awaitable[IndexRows]]


class KindIndex:
    """The vectors and the words of one kind of row (memories or chunks), kept in step."""

    __slots__ = ("vectors", "words")

    def __init__(
        self, dimension: int, capacity: int = 1024, *, exact_up_to: int = EXACT_UP_TO
    ) -> None:
        self.vectors = FlatIndex(dimension, capacity, exact_up_to=exact_up_to)
        self.words = LexicalIndex(capacity)

    def __len__(self) -> int:
        return len(self.vectors)

    def add(
        self, keys: Sequence[int], vectors: np.ndarray, texts: Sequence[str], live: Sequence[bool]
    ) -> None:
        self.vectors.add(keys, vectors, live)
        self.words.add(keys, texts, live)

    def set_live(self, key: int, live: bool) -> None:
        self.vectors.set_live(key, live)
        self.words.set_live(key, live)

    def remove(self, keys: Collection[int]) -> None:
        self.vectors.remove(keys)
        self.words.remove(keys)


class NamespaceIndexes:
    __slots__ = ("chunks", "memories")

    def __init__(self, memories: KindIndex, chunks: KindIndex) -> None:
        self.memories = memories
        self.chunks = chunks


class Indexes:
    def __init__(self, store: Store, dimension: int, exact_up_to: int = EXACT_UP_TO) -> None:
        self.store = store
        self.dimension = dimension
        self.exact_up_to = exact_up_to
        self._loaded: dict[str, NamespaceIndexes] = {}
        self._loading: dict[str, asyncio.Lock] = {}

    def loaded(self, namespace: str) -> NamespaceIndexes | None:
        """The indexes if already in memory; writers update only those (a later load reads the rows)."""
        return self._loaded.get(namespace)

    async def get(self, namespace: str) -> NamespaceIndexes:
        indexes = self._loaded.get(namespace)
        if indexes is not None:
            return indexes
        async with self._loading.setdefault(namespace, asyncio.Lock()):
            indexes = self._loaded.get(namespace)
            if indexes is None:
                # In pages of the index, each short; the whole load outlives the request that
                # started it, which would otherwise be cut and leave the next to begin again.
                with deadline.lifted():
                    indexes = self._loaded[namespace] = await self._load(namespace)
        return indexes

    def forget(self, namespace: str) -> None:
        self._loaded.pop(namespace, None)

    async def _load(self, namespace: str) -> NamespaceIndexes:
        """Page the rows straight into preallocated arrays: at 100k memories a load that held
        every row at once would briefly need three copies of the vectors."""
        async with self.store.read() as reader:
            memory_count, chunk_count = await reader.count_vectors(namespace)
        memories, chunks = (
            KindIndex(self.dimension, max(1024, count), exact_up_to=self.exact_up_to)
            for count in (memory_count, chunk_count)
        )
        pages: list[tuple[KindIndex, Page]] = [
            (memories, lambda reader, after: reader.memory_index_rows(namespace, after, LOAD_PAGE)),
            (chunks, lambda reader, after: reader.chunk_index_rows(namespace, after, LOAD_PAGE)),
        ]
        for index, page in pages:
            after = 0
            while True:
                async with self.store.read() as reader:
                    rows = await page(reader, after)
                if not rows.seqs:
                    break
                index.add(rows.seqs, stack(rows.vectors, self.dimension), rows.texts, rows.live)
                after = rows.seqs[-1]
        release_freed_memory()
        return NamespaceIndexes(memories, chunks)
