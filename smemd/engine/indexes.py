"""One vector index per namespace and kind, loaded from the store's BLOBs on first use."""

from __future__ import annotations

import asyncio

from smemd.engine.vectorindex import FlatIndex
from smemd.store.api import Store
from smemd.store.vectors import stack


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
        async with self.store.read() as reader:
            m_keys, m_blobs, m_live = await reader.memory_vectors(namespace)
            c_keys, c_blobs = await reader.chunk_vectors(namespace)
        memories = FlatIndex(self.dimension, capacity=max(1024, len(m_keys)))
        memories.add(m_keys, stack(m_blobs, self.dimension), m_live)
        chunks = FlatIndex(self.dimension, capacity=max(1024, len(c_keys)))
        chunks.add(c_keys, stack(c_blobs, self.dimension), [True] * len(c_keys))
        return NamespaceIndexes(memories, chunks)
