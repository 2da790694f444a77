"""Hybrid recall: vectors and BM25 over memories and chunks, fused per passage, cut and hydrated.

Filters and time travel restrict the candidates *before* ranking: they become SQL conditions for
BM25 and an explicit candidate set for the vector scan. Without them the vector scan uses the
index's live mask (latest, not forgotten), which is the fast path.

Ranking fuses scores, not ranks, per passage: a chunk together with the memories extracted from
it. A memory and its chunk say the same thing, so they share one score and the passage one place
in the list; further results from a passage follow at a discount instead of crowding out other
passages. A passage scores a weighted sum of its best memory's cosine, its chunk's cosine and the
two BM25 scores (each list scaled to 0..1). Reciprocal rank fusion would throw away how far apart
two candidates are, which is most of what a small embedder knows.

Time adds two bonuses. A passage dated inside a window the query names gets `Fusion.date`: an
absolute date, a relative one ("last month", "two weeks ago") resolved against `as_of` or else
now, or a loose period ("recently", "in the spring") at a fraction of it. A query that asks for a
time ("when did…", "how long ago…") favours passages that state one by `Fusion.told_time`: the
answer is usually in the words ("yesterday", "for three years"), not in the passage's date.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import msgspec
import numpy as np

from smemd.engine.dates.mentions import tells_time
from smemd.engine.dates.windows import Windows, query_windows
from smemd.engine.filters import Filter
from smemd.engine.index.per_namespace import Indexes, KindIndex, NamespaceIndexes
from smemd.engine.index.words import query_terms
from smemd.engine.quiet import QuietClock
from smemd.fleet.builtin import Embedder
from smemd.store.api import Store
from smemd.store.records import Chunk, Document, Memory

Mode = Literal["hybrid", "memories", "chunks"]
DAY = 86400.0
RERANK_TOP = 40  # how many of the best the cross-encoder re-scores
Key = tuple[str, int]  # ("m", memory seq) or ("c", chunk seq)


class Query(msgspec.Struct, kw_only=True):
    text: str
    mode: Mode = "hybrid"
    limit: int = 10
    threshold: float = 0.0  # a floor on the cosine similarity
    filter: Filter | None = None
    as_of: float | None = None  # valid time: what held in the world then, as smem knows it now
    as_of_recorded: float | None = None  # record time: what smem believed then
    half_life_days: float = 0.0  # recency decay on memories; 0 = off
    include_forgotten: bool = False
    rerank: bool = True  # re-score the top with the fleet's cross-encoder, when it has one


class Hit(msgspec.Struct, kw_only=True):
    score: float  # the fused ranking score; only its order means something
    similarity: float  # cosine with the query, clipped to 0..1
    memory: Memory | None = None
    chunk: Chunk | None = None
    document: Document | None = None  # a chunk's document


class Fusion(msgspec.Struct, frozen=True, kw_only=True):
    """What a passage's score is made of, and how deep each candidate list goes."""

    memory_vector: float = 0.6  # the cosine of its best memory
    chunk_vector: float = 0.15
    memory_lexical: float = 0.05  # BM25, scaled to 0..1 over its list
    chunk_lexical: float = 0.15
    date: float = 0.15  # the query names a date or period and the passage is dated in it
    told_time: float = 0.1  # the query asks when and the passage says when
    repeat: float = 0.5  # each further result from one passage scores this times the one before
    depth: int = 40

    def weights(self, mode: Mode) -> tuple[float, float, float, float]:
        """(memory vector, chunk vector, memory lexical, chunk lexical) for a search mode.

        A mode that searches one kind gives it the other kind's weights, so the balance of
        vector and lexical evidence stays the same.
        """
        if mode == "memories":
            return (
                self.memory_vector + self.chunk_vector,
                0.0,
                self.memory_lexical + self.chunk_lexical,
                0.0,
            )
        if mode == "chunks":
            return (
                0.0,
                self.memory_vector + self.chunk_vector,
                0.0,
                self.memory_lexical + self.chunk_lexical,
            )
        return self.memory_vector, self.chunk_vector, self.memory_lexical, self.chunk_lexical


class Reranker(Protocol):
    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


class Found(msgspec.Struct, kw_only=True):
    """The query's vector, the candidate lists of one search, best first, and their cosines."""

    memory_vector: list[tuple[int, float]] = msgspec.field(default_factory=list)
    memory_lexical: list[tuple[int, float]] = msgspec.field(default_factory=list)
    chunk_vector: list[tuple[int, float]] = msgspec.field(default_factory=list)
    chunk_lexical: list[tuple[int, float]] = msgspec.field(default_factory=list)
    cosines: dict[Key, float] = msgspec.field(default_factory=dict)
    vector: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, np.float32))

    def seqs(self, kind: str) -> list[int]:
        vector, lexical = (
            (self.memory_vector, self.memory_lexical)
            if kind == "m"
            else (self.chunk_vector, self.chunk_lexical)
        )
        return list(dict.fromkeys(seq for seq, _ in vector + lexical))

    def similarity(self, kind: str, seq: int) -> float:
        return max(0.0, min(1.0, self.cosines.get((kind, seq), 0.0)))


class Passage:
    """A chunk and the memories extracted from it (or a memory with no chunk): one ranking unit."""

    __slots__ = ("chunk", "memories")

    def __init__(self) -> None:
        self.chunk: Chunk | None = None
        self.memories: list[Memory] = []


class Recall:
    def __init__(
        self, store: Store, embedder: Embedder, indexes: Indexes, fusion: Fusion | None = None,
        reranker: Reranker | None = None, clock: QuietClock | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.embedder = embedder
        self.indexes = indexes
        self.fusion = fusion or Fusion()
        self.reranker = reranker
        self.clock = clock or QuietClock()

    async def search(self, namespace: str, query: Query) -> list[Hit]:
        self.clock.touch()
        now = time.time()
        when = query_windows(query.text, now if query.as_of is None else query.as_of)
        indexes = await self.indexes.get(namespace)
        found = await self._candidates(namespace, query, indexes, now)
        vector = found.vector
        async with self.store.read() as reader:
            self._fill_cosines(found, vector, indexes)
            memories = await reader.memories_by_seq(found.seqs("m"))
            chunks = await reader.chunks_by_seq(found.seqs("c"))
            # Chunks come with their document; memories need theirs only for a date.
            document_ids = {c.document_id for c in chunks.values()}
            if when:
                document_ids |= {m.document_id for m in memories.values() if m.document_id}
            documents = await reader.documents_by_id(list(document_ids))
        hits = self._rank(found, memories, chunks, documents, query, when, now)
        if query.rerank and self.reranker is not None and len(hits) > 1:
            hits = await self._rerank(query.text, hits)
        return hits[: query.limit]

    async def _rerank(self, text: str, hits: list[Hit]) -> list[Hit]:
        """The top RERANK_TOP in the cross-encoder's order; the rest keep theirs below them."""
        assert self.reranker is not None
        top = hits[:RERANK_TOP]
        scores = await self.reranker.rerank(text, [_text(h) for h in top])
        order = sorted(range(len(top)), key=lambda i: -scores[i])
        return [top[i] for i in order] + hits[RERANK_TOP:]

    async def _candidates(
        self, namespace: str, query: Query, indexes: NamespaceIndexes, now: float
    ) -> Found:
        """The four candidate lists. Without a filter, time travel or the forgotten, each index
        searches its live rows; with them, the store first says which rows the query may see,
        while the query is embedded."""
        depth = self.fusion.depth
        terms = query_terms(query.text)
        restricted = (
            query.filter is not None or query.as_of is not None or query.as_of_recorded is not None
        )
        sides: list[tuple[str, KindIndex, asyncio.Task[set[int]] | None]] = []
        if query.mode != "chunks":
            narrow = restricted or query.include_forgotten
            sees = self._memories_seen(namespace, query, now) if narrow else None
            sides.append(("m", indexes.memories, asyncio.create_task(sees) if sees else None))
        if query.mode != "memories":
            sees = self._chunks_seen(namespace, query) if restricted else None
            sides.append(("c", indexes.chunks, asyncio.create_task(sees) if sees else None))
        found = Found(vector=(await self.embedder.embed([query.text], kind="query"))[0])
        for kind, index, seen in sides:
            among = await seen if seen is not None else None
            vector_hits = index.vectors.search(found.vector, depth, among)
            lexical_hits = index.words.search(terms, depth, among)
            if kind == "m":
                found.memory_vector, found.memory_lexical = vector_hits, lexical_hits
            else:
                found.chunk_vector, found.chunk_lexical = vector_hits, lexical_hits
        return found

    async def _memories_seen(self, namespace: str, query: Query, now: float) -> set[int]:
        where, params = memory_conditions(query, now)
        async with self.store.scan(namespace) as reader:
            return set(await reader.memory_seqs(namespace, where, params))

    async def _chunks_seen(self, namespace: str, query: Query) -> set[int]:
        where, params = chunk_conditions(query)
        async with self.store.scan(namespace) as reader:
            return set(await reader.chunk_seqs(namespace, where, params))

    @staticmethod
    def _fill_cosines(found: Found, vector: np.ndarray, indexes: NamespaceIndexes) -> None:
        """Candidates found by their vectors have a cosine; those found only by BM25 get one."""
        found.cosines.update((("m", seq), cos) for seq, cos in found.memory_vector)
        found.cosines.update((("c", seq), cos) for seq, cos in found.chunk_vector)
        for kind, index in (("m", indexes.memories), ("c", indexes.chunks)):
            missing = [seq for seq in found.seqs(kind) if (kind, seq) not in found.cosines]
            for seq, cos in zip(missing, index.vectors.cosines(vector, missing), strict=True):
                found.cosines[kind, seq] = cos

    def _rank(
        self, found: Found, memories: dict[int, Memory], chunks: dict[int, Chunk],
        documents: dict[str, Document], query: Query, when: Windows, now: float,
    ) -> list[Hit]:  # fmt: skip
        at = next((t for t in (query.as_of, query.as_of_recorded) if t is not None), now)
        passages: dict[tuple[str, str], Passage] = {}
        for memory in memories.values():
            expired = memory.expires_at is not None and memory.expires_at <= at
            if expired and not query.include_forgotten:
                continue  # the live mask does not know about expiry
            key = ("c", memory.chunk_id) if memory.chunk_id else ("m", memory.id)
            passages.setdefault(key, Passage()).memories.append(memory)
        for chunk in chunks.values():
            passages.setdefault(("c", chunk.id), Passage()).chunk = chunk
        score = Scorer(self.fusion, found, query.mode)
        hits: list[Hit] = []
        for passage in passages.values():
            base = score(passage)
            if when:
                base += self.fusion.date * when.weight(passage_date(passage, documents))
            if when.asks_time and tells_time(passage_text(passage)):
                base += self.fusion.told_time
            for i, item in enumerate(score.members(passage, query.threshold)):
                value = base * self.fusion.repeat**i
                if isinstance(item, Chunk):
                    hit = Hit(
                        score=value, similarity=found.similarity("c", item.seq), chunk=item,
                        document=documents.get(item.document_id),
                    )  # fmt: skip
                else:
                    if query.half_life_days > 0:
                        age_days = max(0.0, at - (item.event_at or item.created_at)) / DAY
                        value *= 0.5 ** (age_days / query.half_life_days)
                    hit = Hit(score=value, similarity=found.similarity("m", item.seq), memory=item)
                hits.append(hit)
        hits.sort(key=lambda h: -h.score)
        return hits


class Scorer:
    """Scores passages from one search's candidate lists."""

    def __init__(self, fusion: Fusion, found: Found, mode: Mode) -> None:
        self.weights = fusion.weights(mode)
        self.found = found
        self.memory_lexical = scaled(found.memory_lexical, fusion.depth)
        self.chunk_lexical = scaled(found.chunk_lexical, fusion.depth)
        # What a candidate missing from a vector list scored there: at most the list's last.
        self.memory_floor = found.memory_vector[-1][1] if found.memory_vector else 1.0
        self.chunk_floor = found.chunk_vector[-1][1] if found.chunk_vector else 1.0

    def __call__(self, passage: Passage) -> float:
        memory_vector, chunk_vector, memory_lexical, chunk_lexical = self.weights
        similarity = self.found.similarity
        best = max((similarity("m", m.seq) for m in passage.memories), default=None)
        chunk = passage.chunk
        own = similarity("c", chunk.seq) if chunk is not None else None
        # A signal the passage lacks is estimated from the one it has, capped by the floor of
        # the list it was missing from: a chunk whose memories were not found, a memory whose
        # chunk was not.
        if best is None:
            best = min(own or 0.0, self.memory_floor)
        if own is None:
            own = min(best, self.chunk_floor)
        lexical = max((self.memory_lexical.get(m.seq, 0.0) for m in passage.memories), default=0.0)
        return (
            memory_vector * best
            + chunk_vector * own
            + memory_lexical * lexical
            + chunk_lexical * (self.chunk_lexical.get(chunk.seq, 0.0) if chunk else 0.0)
        )

    def members(self, passage: Passage, threshold: float) -> list[Memory | Chunk]:
        """What a passage shows, in order: its best memory, its chunk, then its other memories."""
        memory_vector, _, memory_lexical, _ = self.weights

        def own(memory: Memory) -> float:
            return memory_vector * self.found.similarity(
                "m", memory.seq
            ) + memory_lexical * self.memory_lexical.get(memory.seq, 0.0)

        ordered: list[Memory | Chunk] = [*sorted(passage.memories, key=own, reverse=True)]
        if passage.chunk is not None:
            ordered.insert(1, passage.chunk)
        return [
            item
            for item in ordered
            if self.found.similarity("c" if isinstance(item, Chunk) else "m", item.seq) >= threshold
        ]


def _text(hit: Hit) -> str:
    if hit.memory is not None:
        return hit.memory.text
    assert hit.chunk is not None
    return hit.chunk.text


def scaled(hits: list[tuple[int, float]], depth: int) -> dict[int, float]:
    """BM25 scores to 0..1 over their list: the top is 1, the floor 0.

    The floor is the last score when the list was cut at `depth` (what was cut scored below
    it), else 0: the list holds every match.
    """
    if not hits:
        return {}
    top = hits[0][1]
    floor = hits[-1][1] if len(hits) >= depth else 0.0
    span = top - floor
    return {seq: (score - floor) / span if span > 0 else 1.0 for seq, score in hits}


def passage_text(passage: Passage) -> str:
    """What a passage says: its chunk, else its memories."""
    if passage.chunk is not None:
        return passage.chunk.text
    return " ".join(m.text for m in passage.memories)


def passage_date(passage: Passage, documents: dict[str, Document]) -> float:
    """When a passage was said: its document's date, else when the document or memory arrived."""
    if passage.chunk is not None:
        document = documents.get(passage.chunk.document_id)
        if document is not None:
            return document.content_date or document.created_at
        return passage.chunk.created_at
    memory = passage.memories[0]
    document = documents.get(memory.document_id) if memory.document_id else None
    if memory.event_at is not None:
        return memory.event_at
    if document is not None:
        return document.content_date or document.created_at
    return memory.created_at


def memory_conditions(query: Query, now: float) -> tuple[str, list[Any]]:
    """SQL over alias `m` for what this query may see among memories."""
    parts: list[str] = []
    params: list[Any] = []
    at = next((t for t in (query.as_of, query.as_of_recorded) if t is not None), now)
    if query.as_of_recorded is not None:
        # What smem held as latest at that instant: stored by then, not yet superseded.
        recorded = query.as_of_recorded
        parts.append("m.created_at <= ? AND (m.superseded_at IS NULL OR m.superseded_at > ?)")
        params += [recorded, recorded]
        if not query.include_forgotten:
            parts.append("m.forgotten_at IS NULL OR m.forgotten_at > ?")
            params.append(recorded)
    elif query.as_of is None:
        parts.append("m.is_latest = 1")
        if not query.include_forgotten:
            parts.append("m.forgotten_at IS NULL")
    if query.as_of is not None:
        # The version whose valid time holds that instant, as smem knows the history now.
        parts.append("m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
        params += [query.as_of, query.as_of]
        if not query.include_forgotten and query.as_of_recorded is None:
            parts.append("m.forgotten_at IS NULL")
    if not query.include_forgotten:
        parts.append("m.expires_at IS NULL OR m.expires_at > ?")
        params.append(at)
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("m.metadata")
        parts.append(sql)
        params += filter_params
    return " AND ".join(f"({p})" for p in parts), params


def chunk_conditions(query: Query) -> tuple[str, list[Any]]:
    """SQL over aliases `c` (chunk) and `d` (its document)."""
    parts: list[str] = ["1"]
    params: list[Any] = []
    if query.as_of is not None:  # said by then: the document's date, else when it came
        parts.append("coalesce(d.content_date, c.created_at) <= ?")
        params.append(query.as_of)
    if query.as_of_recorded is not None:
        parts.append("c.created_at <= ?")
        params.append(query.as_of_recorded)
    if query.filter is not None:
        sql, filter_params = query.filter.to_sql("d.metadata")
        parts.append(sql)
        params += filter_params
    return " AND ".join(f"({p})" for p in parts), params
