"""The extracting phase: candidate facts from a document's chunks, typed and embedded.

With a model (the fleet's background chat lane) the LLM reads the chunks in groups
(`model_facts`); without one, a heuristic cuts facts from each chunk's sentences (`sentence_facts`).
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime

import numpy as np

from smemd.engine.dates.relative import resolve
from smemd.engine.ingest import chat_logs, sentence_facts
from smemd.engine.ingest.model_facts import Chatter, LlmFact, extract_facts
from smemd.engine.transcripts import opening_of
from smemd.fleet.builtin import Embedder
from smemd.instants import utc_day
from smemd.store.protocol import Store
from smemd.store.records import Candidate, Chunk, Document, Job


async def extract_candidates(
    store: Store, embedder: Embedder, job: Job, doc: Document, llm: Chatter | None = None,
    *, timeout: float | None = None,  # noqa: ASYNC109
) -> list[tuple[Candidate, np.ndarray]]:  # fmt: skip
    """`timeout` bounds each model call (None: the client's own)."""
    async with store.read() as reader:
        chunks = await reader.chunks_of(doc.id)
    if llm is not None:
        async with store.read() as reader:
            found = await reader.namespaces(name=doc.namespace, limit=1, offset=0)
        guide = found[0].supporting_context if found else ""
        candidates = await _read_by_llm(llm, job, doc, chunks, guide, timeout)
    else:
        candidates = _cut_from_sentences(job, doc, chunks)
    vectors = await embedder.embed([c.text for c in candidates], kind="document")
    return list(zip(candidates, vectors, strict=True))


async def _read_by_llm(
    llm: Chatter, job: Job, doc: Document, chunks: list[Chunk], supporting_context: str,
    timeout: float | None,  # noqa: ASYNC109
) -> list[Candidate]:  # fmt: skip
    """Facts as the model reads them. A failure (no content, not JSON) fails the phase, to be
    retried: it is never taken for a document without facts.

    The model is told one date per call: a chat log's messages of another day (`said_at`) are
    read in a call of their own, so that "today" in each is its own day."""
    found: list[tuple[list[Chunk], LlmFact]] = []
    for day, run in itertools.groupby(chunks, key=lambda c: utc_day(_said_or_stored(c, doc))):
        told = list(run)
        facts = await extract_facts(
            llm, [c.text for c in told], source=doc.title or doc.url or doc.id,
            document_date=day, supporting_context=supporting_context, timeout=timeout,
        )  # fmt: skip
        found += [(told, fact) for fact in facts]
    return [_candidate(job, told, n, fact) for n, (told, fact) in enumerate(found)]


def _candidate(job: Job, chunks: list[Chunk], position: int, fact: LlmFact) -> Candidate:
    return Candidate(
        job_id=job.id, position=position, chunk_id=chunks[fact.chunks[0]].id, text=fact.text,
        type=fact.type, event_at=_midnight(fact.event_date) if fact.event_date else None,
        typed_by="extraction", entities=list(fact.entities),
    )  # fmt: skip


def _midnight(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _cut_from_sentences(job: Job, doc: Document, chunks: list[Chunk]) -> list[Candidate]:
    candidates: list[Candidate] = []
    # A chat turn written as "Speaker: text" (a chat log's message is a chunk so written). Facts
    # are cut from the text alone (a name before the colon would make "Caroline: Hey Mel!" look
    # like content) and each keeps the speaker, so "I went to the group" still says who went.
    speakers = chat_logs.speakers(doc.content)
    for chunk in chunks:
        prefix, text = opening_of(chunk.text, speakers)
        for fact in sentence_facts.candidate_facts(text):
            fact = prefix + fact
            kind = sentence_facts.classify(fact)
            candidates.append(
                Candidate(
                    job_id=job.id,
                    position=len(candidates),
                    chunk_id=chunk.id,
                    text=fact,
                    type=kind,
                    event_at=_sentence_date(fact, kind, said_at(chunk, doc)),
                )
            )
    return candidates


def said_at(chunk: Chunk, doc: Document) -> float | None:
    """When a chunk was said: its message's time (a chat log's), else its document's date."""
    return chunk.said_at if chunk.said_at is not None else doc.content_date


def _said_or_stored(chunk: Chunk, doc: Document) -> float:
    said = said_at(chunk, doc)
    return said if said is not None else doc.created_at


def _sentence_date(fact: str, kind: str, said: float | None) -> float | None:
    """When a sentence says it happened: the day a relative phrase in it names against the day
    it was said ("yesterday", "three weeks ago"); else, for an episode, that day."""
    if said is not None:
        resolved = resolve(fact, utc_day(said))
        if resolved is not None:
            return _midnight(resolved.day)
    return said if kind == "episode" else None
