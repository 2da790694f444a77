"""The extracting phase without an LLM: candidate facts from each chunk, typed and embedded."""

from __future__ import annotations

import re

import numpy as np

from smemd.engine import facts
from smemd.fleet.builtin import Embedder
from smemd.store.api import Store
from smemd.store.records import Candidate, Document, Job

# A chat turn written as "Speaker: text". Facts are cut from the text alone (a name before the
# colon would make "Caroline: Hey Mel!" look like content) and each keeps the speaker, so
# "I went to the group" still says who went.
_SPEAKER = re.compile(r"^([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}):\s+")


async def extract_candidates(
    store: Store, embedder: Embedder, job: Job, doc: Document
) -> list[tuple[Candidate, np.ndarray]]:
    async with store.read() as reader:
        chunks = await reader.chunks_of(doc.id)
    candidates: list[Candidate] = []
    for chunk in chunks:
        speaker = _SPEAKER.match(chunk.text)
        prefix, text = (
            (speaker.group(0), chunk.text[speaker.end() :]) if speaker else ("", chunk.text)
        )
        for fact in facts.candidate_facts(text):
            fact = prefix + fact
            kind = facts.classify(fact)
            candidates.append(
                Candidate(
                    job_id=job.id,
                    position=len(candidates),
                    chunk_id=chunk.id,
                    text=fact,
                    type=kind,
                    # Without an LLM the best guess for when an episode happened is the
                    # document's own date.
                    event_at=doc.content_date if kind == "episode" else None,
                )
            )
    vectors = await embedder.embed([c.text for c in candidates], kind="document")
    return list(zip(candidates, vectors, strict=True))
