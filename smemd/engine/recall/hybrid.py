"""Hybrid recall: vectors and BM25 over memories and chunks, fused per passage, cut and hydrated.

Filters, an entity and time travel restrict the candidates *before* ranking: they become SQL conditions for
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

Who said a passage adds a third: a query that names its speaker, or between a user and an
assistant points at them ("I", "you said"), favours it by `Fusion.speaker`
(smemd.engine.recall.speakers). Such a query's vector leaves the speaker's name out: every
turn of theirs opens with it, and a small embedder reads little else of a short question. A
request for something new ("what would you recommend…", "write a function…") favours what
someone said they prefer, avoid or want done, by `Fusion.standing`
(smemd.engine.recall.standing): a preference shares little with the request it should shape.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol

import msgspec
import numpy as np

from smemd.engine.dates.mentions import tells_time
from smemd.engine.dates.windows import Windows, query_windows
from smemd.engine.index.lookup import KindLookup, Lookups
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.quiet import QuietClock
from smemd.engine.recall.ordering import lift_sessions, sessions_of, spread
from smemd.engine.recall.query import Query
from smemd.engine.recall.scoring import (
    Found,
    Fusion,
    Passage,
    Scorer,
    passage_date,
    passage_text,
)
from smemd.engine.recall.speakers import (
    QuerySpeakers,
    chunk_speaker,
    may_name_someone,
    passage_source,
    passage_speaker,
    without_speakers,
)
from smemd.engine.recall.standing import asks_for_something_new, states_standing
from smemd.engine.transcripts import speaker_of, speaker_of_document
from smemd.fleet.builtin import Embedder
from smemd.store import deadline
from smemd.store.protocol import Store
from smemd.store.records import Chunk, Document, Memory
from smemd.tallies import Tally, Timings

DAY = 86400.0
RERANK_TOP = 40  # how many of the best the cross-encoder re-scores
# A search waits this long for its namespace's indexes to load, then answers 503 with
# Retry-After: a client can tell "come back" from a hang, and other namespaces are served.
LOAD_WAIT_S = 5.0


class Hit(msgspec.Struct, kw_only=True):
    score: float  # the fused ranking score; only its order means something
    similarity: float  # cosine with the query, clipped to 0..1
    memory: Memory | None = None
    chunk: Chunk | None = None
    document: Document | None = None  # a chunk's document
    source: str = ""  # what its further results follow others' best in (speakers.passage_source)


# What a search serves: a search route, ask or compress, a profile's bucket, a graph's seeds,
# forgetting by query. (A whole profile is timed as `profile`: smemd.engine.recall.profile.)
Purpose = Literal["search", "ask", "compress", "bucket", "graph", "forget"]


class Gathered(NamedTuple):
    """What one search found, before it is ranked."""

    found: Found
    memories: dict[int, Memory]
    chunks: dict[int, Chunk]
    documents: dict[str, Document]
    when: Windows
    speakers: QuerySpeakers  # whose turns the query asks about
    request: bool  # whether it asks for something new, which a preference may shape
    now: float

    def at(self, query: Query) -> float:
        """The instant the query is asked at: its time travel's, else now."""
        return next((t for t in (query.as_of, query.as_of_recorded) if t is not None), self.now)


class Rows(NamedTuple):
    """The rows of a search's candidates, by seq, and their documents, by id."""

    memories: dict[int, Memory]
    chunks: dict[int, Chunk]
    documents: dict[str, Document]


NOTHING_READ = Rows({}, {}, {})


class Side(NamedTuple):
    """One kind of row a search looks in, and the rows it may see (None: every live one)."""

    kind: str  # "m" memories, "c" chunks
    lookup: KindLookup
    among: set[int] | None


class Candidate(NamedTuple):
    passage: Passage
    signals: np.ndarray  # SIGNALS
    session: float | None


class Reranker(Protocol):
    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


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
        # What recall did (smemd.api.metrics writes them out): seconds by purpose and mode,
        # results returned by purpose, searches re-scored by the cross-encoder or not.
        self.latency = Timings()
        self.results = Tally()
        self.reranked = Tally()

    async def search(
        self, namespace: str, query: Query, *, purpose: Purpose = "search"
    ) -> list[Hit]:
        """The best `query.limit` hits; `purpose` says what the search serves, for the counts
        of what recall does (`latency`, `results`, `reranked`)."""
        self.clock.touch()
        with self.latency.timing(purpose, query.mode):
            gathered = await self._gather(namespace, query)
            hits = self._rank(gathered, query)
            reranked = query.rerank and self.reranker is not None and len(hits) > 1
            if reranked:
                hits = await self._rerank(query.text, hits)
        self.reranked.add("yes" if reranked else "no")
        self.results.add(purpose, n=min(len(hits), query.limit))
        return hits[: query.limit]

    async def passage_signals(self, namespace: str, query: Query) -> list[Candidate]:
        """Every candidate passage of a search with its SIGNALS, unweighted, and its session:
        what the fusion's weights are fitted on (tests/bench/fit_fusion.py)."""
        gathered = await self._gather(namespace, query)
        score = Scorer(self.fusion, gathered.found, query.mode)
        passages = list(self._passages(gathered, query).values())
        return [
            Candidate(passage, self._signals(score, passage, gathered, query), session)
            for passage, session in zip(
                passages, sessions_of(passages, gathered.documents), strict=True
            )
        ]

    async def _gather(self, namespace: str, query: Query) -> Gathered:
        """The candidates, their cosines, and the rows they are (with the documents a passage
        needs for its date and its speaker)."""
        now = time.time()
        when = query_windows(query.text, now if query.as_of is None else query.as_of)
        lookups = await self.indexes.lookup(namespace, wait_s=LOAD_WAIT_S)
        found, read = await self._candidates(namespace, query, lookups, now)
        await self._fill_cosines(found, found.vector, lookups)
        rows = await self._rows(found, read)
        speakers = QuerySpeakers(query.text, speakers_of(rows))
        return Gathered(
            found, rows.memories, rows.chunks, rows.documents, when, speakers,
            asks_for_something_new(query.text), now,
        )  # fmt: skip

    async def _rows(self, found: Found, read: Rows = NOTHING_READ) -> Rows:
        """The rows of the candidates, and their documents (those `read` are not read again)."""
        memory_seqs, chunk_seqs = found.seqs("m"), found.seqs("c")
        memories = {seq: read.memories[seq] for seq in memory_seqs if seq in read.memories}
        chunks = {seq: read.chunks[seq] for seq in chunk_seqs if seq in read.chunks}
        async with self.store.read() as reader:
            memories |= await reader.memories_by_seq([s for s in memory_seqs if s not in memories])
            chunks |= await reader.chunks_by_seq([s for s in chunk_seqs if s not in chunks])
            # A passage's document gives its date and its speaker, a memory's as a chunk's.
            document_ids = {c.document_id for c in chunks.values()}
            document_ids |= {m.document_id for m in memories.values() if m.document_id}
            documents = {i: read.documents[i] for i in document_ids if i in read.documents}
            documents |= await reader.documents_by_id(
                [i for i in document_ids if i not in documents]
            )
        return Rows(memories, chunks, documents)

    async def _rerank(self, text: str, hits: list[Hit]) -> list[Hit]:
        """The top RERANK_TOP in the cross-encoder's order; the rest keep theirs below them."""
        assert self.reranker is not None
        top = hits[:RERANK_TOP]
        scores = await self.reranker.rerank(text, [_text_of(h) for h in top])
        order = sorted(range(len(top)), key=lambda i: -scores[i])
        return [top[i] for i in order] + hits[RERANK_TOP:]

    async def _candidates(
        self, namespace: str, query: Query, lookups: Lookups, now: float
    ) -> tuple[Found, Rows]:
        """The four candidate lists, and the rows already read to find them. Without a filter,
        time travel or the forgotten, each index searches its live rows; with them, the store
        first says which rows the query may see, while the query is embedded.

        A query that may name someone (a capitalised word) is embedded without the names of
        the speakers its BM25 candidates have (speakers.py: without_speakers), so its BM25
        lists come first, and its embedding waits for them; any other is embedded at once, and
        its four lists searched together (a store that searches itself answers them on four
        connections)."""
        restricted = (
            query.filter is not None or query.as_of is not None or query.as_of_recorded is not None
            or query.entity is not None
        )  # fmt: skip
        seeing: list[tuple[str, KindLookup, asyncio.Task[set[int]] | None]] = []
        if query.mode != "chunks":
            narrow = restricted or query.include_forgotten
            sees = self._memories_seen(namespace, query, now) if narrow else None
            seeing.append(("m", lookups.memories, asyncio.create_task(sees) if sees else None))
        if query.mode != "memories":
            sees = self._chunks_seen(namespace, query, now) if restricted else None
            seeing.append(("c", lookups.chunks, asyncio.create_task(sees) if sees else None))
        try:
            read = NOTHING_READ
            if may_name_someone(query.text):
                sides = [Side(kind, lookup, await seen if seen else None)
                         for kind, lookup, seen in seeing]  # fmt: skip
                found = Found()
                await self._lists(sides, found, "lexical", query.text)
                read = await self._rows(found)
                unnamed = without_speakers(query.text, speakers_of(read)) or query.text
                found.vector = await self._embedded(unnamed)
                await self._lists(sides, found, "vector")
            else:
                found = Found(vector=await self._embedded(query.text))
                sides = [Side(kind, lookup, await seen if seen else None)
                         for kind, lookup, seen in seeing]  # fmt: skip
                await asyncio.gather(
                    self._lists(sides, found, "vector"),
                    self._lists(sides, found, "lexical", query.text),
                )
        except BaseException:
            for _, _, seen in seeing:
                if seen is not None:
                    seen.cancel()
            raise
        return found, read

    async def _lists(
        self, sides: list[Side], found: Found, by: Literal["vector", "lexical"], text: str = ""
    ) -> None:
        """Fills one pair of `found`'s lists: the rows nearest its vector, or BM25's for `text`,
        on each side (Found's `memory_vector`, `chunk_lexical`, …)."""
        depth = self.fusion.depth
        lists = await asyncio.gather(*(
            side.lookup.nearest(found.vector, depth, side.among) if by == "vector"
            else side.lookup.matching(text, depth, side.among)
            for side in sides
        ))  # fmt: skip
        for side, hits in zip(sides, lists, strict=True):
            setattr(found, f"{'memory' if side.kind == 'm' else 'chunk'}_{by}", hits)

    async def _embedded(self, text: str) -> np.ndarray:
        # The model may be busy: the wait is the request's, within its deadline.
        vectors = await deadline.waiting(self.embedder.embed([text], kind="query"))
        return vectors[0]

    async def _memories_seen(self, namespace: str, query: Query, now: float) -> set[int]:
        async with self.store.scan(namespace) as reader:
            return set(await reader.memory_seqs(namespace, query.visibility(now)))

    async def _chunks_seen(self, namespace: str, query: Query, now: float) -> set[int]:
        async with self.store.scan(namespace) as reader:
            return set(await reader.chunk_seqs(namespace, query.visibility(now)))

    @staticmethod
    async def _fill_cosines(found: Found, vector: np.ndarray, lookups: Lookups) -> None:
        """Candidates found by their vectors have a cosine; those found only by BM25 get one."""
        found.cosines.update((("m", seq), cos) for seq, cos in found.memory_vector)
        found.cosines.update((("c", seq), cos) for seq, cos in found.chunk_vector)
        for kind, lookup in (("m", lookups.memories), ("c", lookups.chunks)):
            missing = [seq for seq in found.seqs(kind) if (kind, seq) not in found.cosines]
            for seq, cos in zip(missing, await lookup.cosines(vector, missing), strict=True):
                found.cosines[kind, seq] = cos

    @staticmethod
    def _signals(score: Scorer, passage: Passage, gathered: Gathered, query: Query) -> np.ndarray:
        """The passage's SIGNALS: those of the candidate lists, then whether it is dated in a
        window the query names (1, or less for a loose one), whether it says when, for a
        query that asks when, whether the query asks about who said it, and whether it states a
        preference the query (a request for something new) should honour."""
        when, documents = gathered.when, gathered.documents
        dated = when.weight(passage_date(passage, documents)) if when else 0.0
        tells = 1.0 if when.asks_time and tells_time(passage_text(passage)) else 0.0
        speaker = passage_speaker(passage, documents)
        named = 1.0 if gathered.speakers.wants(speaker) else 0.0
        standing = gathered.request and states_standing(passage_text(passage), speaker)
        return np.array(
            [*score.signals(passage), dated, tells, named, float(standing)], dtype=np.float64
        )

    @staticmethod
    def _passages(gathered: Gathered, query: Query) -> dict[tuple[str, str], Passage]:
        """The candidates as passages: a chunk with the memories read from it, or a memory of
        no chunk alone; expired memories left out unless the query asks for the forgotten."""
        at = gathered.at(query)
        passages: dict[tuple[str, str], Passage] = {}
        for memory in gathered.memories.values():
            expired = memory.expires_at is not None and memory.expires_at <= at
            if expired and not query.include_forgotten:
                continue  # the live mask does not know about expiry
            key = ("c", memory.chunk_id) if memory.chunk_id else ("m", memory.id)
            passages.setdefault(key, Passage()).memories.append(memory)
        for chunk in gathered.chunks.values():
            passages.setdefault(("c", chunk.id), Passage()).chunk = chunk
        return passages

    def _rank(self, gathered: Gathered, query: Query) -> list[Hit]:
        found, at = gathered.found, gathered.at(query)
        score = Scorer(self.fusion, found, query.mode)
        passages = list(self._passages(gathered, query).values())
        signals = np.array(
            [self._signals(score, p, gathered, query) for p in passages], dtype=np.float64
        ).reshape(len(passages), len(score.weights))
        bases = lift_sessions(
            (signals @ score.weights).tolist(),
            sessions_of(passages, gathered.documents),
            self.fusion.session,
        )
        relevance = score.relevance(signals).tolist()
        hits: list[Hit] = []
        for passage, base, relevant in zip(passages, bases, relevance, strict=True):
            source = passage_source(passage, gathered.documents)
            for item in score.members(passage, query.threshold, relevant):
                value = base
                if isinstance(item, Chunk):
                    hit = Hit(
                        score=value, similarity=found.similarity("c", item.seq), chunk=item,
                        document=gathered.documents.get(item.document_id), source=source,
                    )  # fmt: skip
                else:
                    if query.half_life_days > 0:
                        age_days = max(0.0, at - (item.event_at or item.created_at)) / DAY
                        value *= 0.5 ** (age_days / query.half_life_days)
                    hit = Hit(
                        score=value, similarity=found.similarity("m", item.seq), memory=item,
                        source=source,
                    )  # fmt: skip
                hits.append(hit)
        return spread(hits, self.fusion.repeat, lambda hit: hit.source)


def speakers_of(rows: Rows) -> set[frozenset[str]]:
    """Who said the candidates: their documents' speakers, those their chunks open with in a
    document that names none, and those a memory of no document opens with (as
    passage_speaker reads them)."""
    speakers = {speaker_of_document(d) for d in rows.documents.values()}
    speakers |= {chunk_speaker(c, rows.documents.get(c.document_id)) for c in rows.chunks.values()}
    speakers |= {speaker_of(m.text) for m in rows.memories.values() if not m.document_id}
    return speakers


def _text_of(hit: Hit) -> str:
    if hit.memory is not None:
        return hit.memory.text
    assert hit.chunk is not None
    return hit.chunk.text
