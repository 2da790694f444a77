"""One vector index per namespace and kind, loaded from the store's BLOBs on first use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from smemd.engine.vectorindex import FlatIndex
from smemd.store.api import Reader, Store
from smemd.store.vectors import stack

LOAD_PAGE = 4096
Page = Callable[[Reader, int], Awaitable[tuple[list[int], list[bytes], list[bool]]]]


class NamespaceIndexes:
    __slots__ = ("chunks", "memories")

    def __init__(self, memories: FlatIndex, chunks: FlatIndex) -> None:
        self.memories = memories
        self.chunks = chunks


class Indexes:
    def __init__(self, store: Store, dimension: int) -> None:
        self.store = store
        self.dimension = dimension
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
                indexes = self._loaded[namespace] = await self._load(namespace)
        return indexes

    def forget(self, namespace: str) -> None:
        self._loaded.pop(namespace, None)

    async def _load(self, namespace: str) -> NamespaceIndexes:
        """Page the BLOBs straight into preallocated matrices: at 100k memories a load that held
        every row at once would briefly need three copies of the vectors."""
        async with self.store.read() as reader:
            memory_count, chunk_count = await reader.count_vectors(namespace)
        memories = FlatIndex(self.dimension, capacity=max(1024, memory_count))
        chunks = FlatIndex(self.dimension, capacity=max(1024, chunk_count))
        pages: list[tuple[FlatIndex, Page]] = [
            (memories, lambda reader, after: reader.memory_vectors(namespace, after, LOAD_PAGE)),
            (chunks, lambda reader, after: reader.chunk_vectors(namespace, after, LOAD_PAGE)),
        ]
        for index, page in pages:
            after = 0
            while True:
                async with self.store.read() as reader:
                    keys, blobs, live = await page(reader, after)
                if not keys:
                    break
                index.add(keys, stack(blobs, self.dimension), live)
                after = keys[-1]
        return NamespaceIndexes(memories, chunks)
