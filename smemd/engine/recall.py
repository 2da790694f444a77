"""Hybrid recall: vectors and BM25 over memories and chunks, fused, decayed, cut and hydrated.

Filters and time travel restrict the candidates *before* ranking: they become SQL conditions for
BM25 and an explicit candidate set for the vector scan. Without them the vector scan uses the
index's live mask (latest, not forgotten), which is the fast path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec
import numpy as np

from smemd.engine.filters import Filter
from smemd.engine.indexes import Indexes, NamespaceIndexes
from smemd.engine.lexical import match_expression
from smemd.fleet.builtin import Embedder
from smemd.store.api import Reader, Store
from smemd.store.records import Chunk, Document, Memory

Mode = Literal["hybrid", "memories", "chunks"]
DAY = 86400.0


class Query(msgspec.Struct, kw_only=True):
    text: str
    mode: Mode = "hybrid"
    limit: int = 10
    threshold: float = 0.0  # a floor on the cosine similarity
    filter: Filter | None = None
    as_of: float | None = None
    half_life_days: float = 0.0  # recency decay on memories; 0 = off
    include_forgotten: bool = False


class Hit(msgspec.Struct, kw_only=True):
    score: float  # the fused ranking score; only its order means something
    similarity: float  # cosine with the query, clipped to 0..1
    memory: Memory | None = None
    chunk: Chunk | None = None
    document: Document | None = None  # a chunk's document


class Fusion(msgspec.Struct, frozen=True, kw_only=True):
    """Weighted reciprocal rank fusion: score = sum(weight / (k + rank)) over the lists."""

    k: float = 60.0
    memory_vector: float = 1.0
    memory_lexical: float = 1.0
    chunk_vector: float = 1.0
    chunk_lexical: float = 1.0
    depth: int = 40  # how deep each list goes


class Reranker(Protocol):
    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


class Recall:
    def __init__(
        self, store: Store, embedder: Embedder, indexes: Indexes, fusion: Fusion | None = None,
        reranker: Reranker | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.embedder = embedder
        self.indexes = indexes
        self.fusion = fusion or Fusion()
        self.reranker = reranker

    async def search(self, namespace: str, query: Query) -> list[Hit]:
        vector = (await self.embedder.embed([query.text], kind="query"))[0]
        indexes = await self.indexes.get(namespace)
        now = time.time()
        depth = self.fusion.depth
        match = match_expression(query.text)
        lists: dict[str, list[int]] = {}
        cosines: dict[tuple[str, int], float] = {}
        async with self.store.read() as reader:
            if query.mode != "chunks":
                where, params = memory_conditions(query, now)
                restricted = query.filter or query.as_of is not None or query.include_forgotten
                among = (
                    set(await reader.memory_seqs(namespace, where, params)) if restricted else None
                )
                lexical = (
                    await reader.bm25_memories(namespace, match, depth, where, params)
                    if match
                    else []
                )
                self._collect(
                    "memory", indexes.memories.search(vector, depth, among), lexical, lists, cosines
                )
            if query.mode != "memories":
                where, params = chunk_conditions(query)
                restricted = query.filter or query.as_of is not None
                among = (
                    set(await reader.chunk_seqs(namespace, where, params)) if restricted else None
                )
                lexical = (
                    await reader.bm25_chunks(namespace, match, depth, where, params)
                    if match
                    else []
                )
                self._collect(
                    "chunk", indexes.chunks.search(vector, depth, among), lexical, lists, cosines
                )
            ranked = self._fuse(lists)
            self._fill_cosines(ranked, cosines, vector, indexes)
            hits = await self._hydrate(reader, ranked, cosines, query, now)
        return hits[: query.limit]

    @staticmethod
    def _collect(
        kind: str, vector_hits: list[tuple[int, float]], lexical_hits: list[tuple[int, float]],
        lists: dict[str, list[int]], cosines: dict[tuple[str, int], float],
    ) -> None:  # fmt: skip
        lists[f"{kind}_vector"] = [seq for seq, _ in vector_hits]
        lists[f"{kind}_lexical"] = [seq for seq, _ in lexical_hits]
        cosines.update(((kind[0], seq), cos) for seq, cos in vector_hits)

    def _fuse(self, lists: dict[str, list[int]]) -> dict[tuple[str, int], float]:
        scores: dict[tuple[str, int], float] = {}
        for name, seqs in lists.items():
            weight: float = getattr(self.fusion, name)
            kind = "m" if name.startswith("memory") else "c"
            for rank, seq in enumerate(seqs, start=1):
                key = (kind, seq)
                scores[key] = scores.get(key, 0.0) + weight / (self.fusion.k + rank)
        return scores

    @staticmethod
    def _fill_cosines(
        ranked: dict[tuple[str, int], float], cosines: dict[tuple[str, int], float],
        vector: np.ndarray, indexes: NamespaceIndexes,
    ) -> None:  # fmt: skip
        """Items found only by BM25 still get a true cosine, for the threshold and the reply."""
        for kind, index in (("m", indexes.memories), ("c", indexes.chunks)):
            missing = [seq for k, seq in ranked if k == kind and (k, seq) not in cosines]
            for seq, cos in zip(missing, index.cosines(vector, missing), strict=True):
                cosines[kind, seq] = cos

    async def _hydrate(
        self, reader: Reader, ranked: dict[tuple[str, int], float],
        cosines: dict[tuple[str, int], float], query: Query, now: float,
    ) -> list[Hit]:  # fmt: skip
        memories = await reader.memories_by_seq([seq for kind, seq in ranked if kind == "m"])
        chunks = await reader.chunks_by_seq([seq for kind, seq in ranked if kind == "c"])
        documents = await reader.documents_by_id(list({c.document_id for c in chunks.values()}))
        hits: list[Hit] = []
        for (kind, seq), score in ranked.items():
            similarity = max(0.0, min(1.0, cosines.get((kind, seq), 0.0)))
            if similarity < query.threshold:
                continue
            if kind == "m" and seq in memories:
                memory = memories[seq]
                expired = memory.expires_at is not None and memory.expires_at <= (
                    query.as_of or now
                )
                if expired and not query.include_forgotten:
                    continue  # the live mask does not know about expiry
                if query.half_life_days > 0:
                    age_days = (
                        max(0.0, (query.as_of or now) - (memory.event_at or memory.created_at))
                        / DAY
                    )
                    score *= 0.5 ** (age_days / query.half_life_days)
                hits.append(Hit(score=score, similarity=similarity, memory=memory))
            elif kind == "c" and seq in chunks:
                chunk = chunks[seq]
                hits.append(
                    Hit(
                        score=score,
                        similarity=similarity,
                        chunk=chunk,
                        document=documents.get(chunk.document_id),
                    )
                )
        hits.sort(key=lambda h: -h.score)
        return hits


def memory_conditions(query: Query, now: float) -> tuple[str, list[Any]]:
    """SQL over alias `m` for what this query may see among memories."""
    parts: list[str] = []
    params: list[Any] = []
    if query.as_of is None:
        parts.append("m.is_latest = 1")
        if not query.include_forgotten:
            parts.append("m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > ?)")
            params.append(now)
    else:
        # What was the latest version at that instant, by recorded time.
        parts.append("m.created_at <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
        params += [query.as_of, query.as_of]
        if not query.include_forgotten:
            parts.append(
                "(m.forgotten_at IS NULL OR m.forgotten_at > ?) AND (m.expires_at IS NULL OR m.expires_at > ?)"
            )
            params += [query.as_of, query.as_of]
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("m.metadata")
        parts.append(sql)
        params += filter_params
    return " AND ".join(f"({p})" for p in parts), params


def chunk_conditions(query: Query) -> tuple[str, list[Any]]:
    """SQL over aliases `c` (chunk) and `d` (its document)."""
    parts: list[str] = ["1"]
    params: list[Any] = []
    if query.as_of is not None:
        parts.append("c.created_at <= ?")
        params.append(query.as_of)
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("d.metadata")
        parts.append(sql)
        params += filter_params
    return " AND ".join(f"({p})" for p in parts), params
