"""What recall asks of a kind of row, whoever answers: the nearest vectors, the best BM25
matches, the cosines of given rows. The in-memory indexes answer for a store that does not
search itself (SQLite); a store that does (PostgreSQL) answers from its own indexes, so that no
daemon holds every namespace's vectors and every daemon on one database finds the same rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, cast

import numpy as np

from smemd.engine.index.kinds import KindIndex
from smemd.engine.index.words import query_terms
from smemd.store.protocol import SearchReading, Store
from smemd.store.records import IndexKind

Hits = list[tuple[int, float]]  # (seq, score), best first


class KindLookup(Protocol):
    async def nearest(
        self, vector: np.ndarray, depth: int, among: Collection[int] | None = None
    ) -> Hits: ...
    async def matching(
        self, text: str, depth: int, among: Collection[int] | None = None
    ) -> Hits: ...
    async def cosines(self, vector: np.ndarray, seqs: Sequence[int]) -> list[float]: ...


class Lookups:
    __slots__ = ("chunks", "memories")

    def __init__(self, memories: KindLookup, chunks: KindLookup) -> None:
        self.memories = memories
        self.chunks = chunks


class InMemoryLookup:
    """A namespace's loaded index of one kind (smemd.engine.index.kinds)."""

    __slots__ = ("index",)

    def __init__(self, index: KindIndex) -> None:
        self.index = index

    async def nearest(
        self, vector: np.ndarray, depth: int, among: Collection[int] | None = None
    ) -> Hits:
        return self.index.vectors.search(vector, depth, among)

    async def matching(self, text: str, depth: int, among: Collection[int] | None = None) -> Hits:
        return self.index.words.search(query_terms(text), depth, among)

    async def cosines(self, vector: np.ndarray, seqs: Sequence[int]) -> list[float]:
        return self.index.vectors.cosines(vector, seqs)


class StoreLookup:
    """One kind of a namespace, searched by the store: its readers are SearchReading."""

    __slots__ = ("kind", "namespace", "store")

    def __init__(self, store: Store, namespace: str, kind: IndexKind) -> None:
        self.store = store
        self.namespace = namespace
        self.kind: IndexKind = kind

    async def nearest(
        self, vector: np.ndarray, depth: int, among: Collection[int] | None = None
    ) -> Hits:
        if depth <= 0 or (among is not None and not among):
            return []
        async with self.store.read() as reader:
            return await cast(SearchReading, reader).nearest(
                self.namespace, self.kind, vector, depth, among
            )

    async def matching(self, text: str, depth: int, among: Collection[int] | None = None) -> Hits:
        if depth <= 0 or (among is not None and not among):
            return []
        async with self.store.read() as reader:
            return await cast(SearchReading, reader).matching(
                self.namespace, self.kind, text, depth, among
            )

    async def cosines(self, vector: np.ndarray, seqs: Sequence[int]) -> list[float]:
        if not seqs:
            return []
        async with self.store.read() as reader:
            return await cast(SearchReading, reader).cosines(self.kind, vector, seqs)
