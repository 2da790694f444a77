"""How recall scores a passage (a chunk and the memories extracted from it): a weighted sum of
its signals — its best memory's cosine, its chunk's cosine, the two BM25 scores (each list
scaled to 0..1), whether it is dated where the query points or says when the query asks when,
whether the query asks about its speaker, and whether it states a preference or a standing
instruction when the query asks for something new; members after the first at a discount."""

from __future__ import annotations

import msgspec
import numpy as np

from smemd.engine.recall.query import Mode
from smemd.store.records import Chunk, Document, Memory

Key = tuple[str, int]  # ("m", memory seq) or ("c", chunk seq)


SIGNALS = (
    "memory_vector", "chunk_vector", "memory_lexical", "chunk_lexical", "date", "told_time",
    "speaker", "standing",
)  # fmt: skip


class Fusion(msgspec.Struct, frozen=True, kw_only=True):
    """What a passage's score is made of, and how deep each candidate list goes.

    The weights are fitted (tests/bench/fit_fusion.py: coordinate ascent on evidence recall,
    checked by leaving one conversation out, over chit-chat and assistant chats alike); a
    chunk's own signals read it with the short turns before it (its context).
    """

    memory_vector: float = 0.6  # the cosine of its best memory
    chunk_vector: float = 0.45  # its chunk's cosine (the chunk read with its context)
    memory_lexical: float = 0.05  # BM25, scaled to 0..1 over its list
    chunk_lexical: float = 0.15
    date: float = 0.3  # the query names a date or period and the passage is dated in it
    told_time: float = 0.2  # the query asks when and the passage says when
    speaker: float = 0.2  # the query asks about who said it (smemd.engine.recall.speakers)
    # The query asks for something new and the passage says what someone prefers or wants done
    # (smemd.engine.recall.standing).
    standing: float = 0.15
    # A passage gains this times the best score of another passage of its session (the date of
    # its document): a conversation's evidence gathers in its sessions.
    session: float = 0.15
    repeat: float = 0.3  # each further result from one document scores this times the one before
    depth: int = 40

    def weights(self, mode: Mode) -> np.ndarray:
        """The weight of each of SIGNALS for a search mode.

        A mode that searches one kind gives it the other kind's weights, so the balance of
        vector and lexical evidence stays the same.
        """
        vector, lexical = (
            self.memory_vector + self.chunk_vector,
            self.memory_lexical + self.chunk_lexical,
        )
        own = {
            "memories": (vector, 0.0, lexical, 0.0),
            "chunks": (0.0, vector, 0.0, lexical),
        }.get(
            mode, (self.memory_vector, self.chunk_vector, self.memory_lexical, self.chunk_lexical)
        )
        return np.array(
            [*own, self.date, self.told_time, self.speaker, self.standing], dtype=np.float64
        )


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


class Scorer:
    """The signals of passages from one search's candidate lists: the SIGNALS that come from
    the lists (the first four; the query's dates add the other two)."""

    def __init__(self, fusion: Fusion, found: Found, mode: Mode) -> None:
        self.weights = fusion.weights(mode)
        self.found = found
        self.memory_lexical = scaled(found.memory_lexical, fusion.depth)
        self.chunk_lexical = scaled(found.chunk_lexical, fusion.depth)
        # What a candidate missing from a vector list scored there: at most the list's last.
        self.memory_floor = found.memory_vector[-1][1] if found.memory_vector else 1.0
        self.chunk_floor = found.chunk_vector[-1][1] if found.chunk_vector else 1.0

    def signals(self, passage: Passage) -> tuple[float, float, float, float]:
        """Its best memory's cosine, its chunk's cosine, and the two BM25 scores."""
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
        chunk_lexical = self.chunk_lexical.get(chunk.seq, 0.0) if chunk else 0.0
        return best, own, lexical, chunk_lexical

    def relevance(self, signals: np.ndarray) -> np.ndarray:
        """Each passage's relevance, 0..1, from its SIGNALS (a row each): the better of its
        cosines (those the mode weighs), raised by BM25, the query's dates, its speaker and a
        stated preference at the rate the fusion weighs them against the cosines. A small
        embedder's cosine with a question is low for code, a log or another register than the
        question's: alone, a threshold on it cuts what the other signals found (README:
        Benchmarks)."""
        vector = self.weights[:2]
        cosine = signals[:, :2][:, vector > 0].max(axis=1, initial=0.0)
        rest = signals[:, 2:] @ self.weights[2:] / vector.sum()
        return np.clip(cosine + rest, 0.0, 1.0)

    def members(self, passage: Passage, threshold: float, relevance: float) -> list[Memory | Chunk]:
        """What a passage shows, in order: its best memory, its chunk, then its other memories.
        Each is kept when its cosine reaches `threshold`; its best memory and its chunk also
        when the passage's `relevance` does (the other memories are other sentences of it, each
        on its own)."""
        memory_vector, _, memory_lexical = self.weights[:3]

        def own(memory: Memory) -> float:
            return float(
                memory_vector * self.found.similarity("m", memory.seq)
                + memory_lexical * self.memory_lexical.get(memory.seq, 0.0)
            )

        ordered: list[Memory | Chunk] = [*sorted(passage.memories, key=own, reverse=True)]
        if passage.chunk is not None:
            ordered.insert(1, passage.chunk)
        leads = (2 if passage.chunk is not None else 1) if relevance >= threshold else 0
        return [
            item
            for i, item in enumerate(ordered)
            if i < leads
            or self.found.similarity("c" if isinstance(item, Chunk) else "m", item.seq) >= threshold
        ]


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
    """When a passage was said: its message's time (a chat log's), else its document's date,
    else when the document or memory arrived."""
    if passage.chunk is not None:
        if passage.chunk.said_at is not None:
            return passage.chunk.said_at
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
