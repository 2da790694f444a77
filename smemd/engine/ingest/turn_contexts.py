"""A turn's context: the short turns before it in its session, which its chunks are searched
with (chunking.context_of), read when the turn is chunked; and read again for the turns after
it that were stored before it.

A client that dates each turn by its own time may send a session's turns out of order (several
requests at once, a chat's log imported after the turns an agent added live). A turn chunked
before the one it answers was stored read another turn, or none, as its context. When that one
is embedded, each turn after it in its session that was stored before it is read again, and a
chunk whose context changes is embedded again and replaced in the same commit
(Worker._embed): the session reads as if it had been sent in order. Turns at one instant follow
one another as they were stored, so a turn stored later changes none of theirs.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from smemd.engine.ingest import chat_logs
from smemd.engine.ingest.chunking import (
    CONTEXT_MAX_TURNS,
    CONTEXT_READ_CHARS,
    Chunk,
    context_of,
)
from smemd.engine.sessions import SESSION_GAP_S
from smemd.engine.transcripts import goes_on, is_turn
from smemd.store.protocol import Reader
from smemd.store.records import Chunk as StoredChunk
from smemd.store.records import Document


async def context_of_document(reader: Reader, doc: Document) -> str:
    """The context a document's chunks carry (a chat log's messages carry their own): the turn
    before it, when short (and a message that goes on its speaker's last, more of the turns
    before). Undated, only turns are read so, and only with the turns since the last note: an
    agent's undated notes are no one's context. Only the opening of `doc.content` is read."""
    before: list[Document] = []
    if doc.content_date is not None or is_turn(doc):
        before = await reader.turns_before(
            doc, CONTEXT_MAX_TURNS, CONTEXT_READ_CHARS, SESSION_GAP_S
        )
    if doc.content_date is None:
        before = list(itertools.takewhile(is_turn, before))
    bursting = bool(before) and goes_on(doc, before[0])
    return context_of(doc.content, [turn.content for turn in before], bursting)


class Restated(NamedTuple):
    """A chunk of a turn after a late one, and the context it reads now."""

    document: Document
    chunk: StoredChunk
    context: str

    def embedding_text(self) -> str:
        chunk = self.chunk
        return Chunk.stored(
            chunk.position, chunk.heading, chunk.text, self.context
        ).embedding_text()


async def stale_after(reader: Reader, doc: Document) -> list[Restated]:
    """The chunks of the turns after `doc` in its session, stored before it, whose context it
    changes (for a chat log, those of the text around it: its messages' are their own)."""
    stale: list[Restated] = []
    after = await reader.turns_after(doc, CONTEXT_MAX_TURNS, CONTEXT_READ_CHARS, SESSION_GAP_S)
    for turn in after:
        if turn.seq > doc.seq:
            continue  # stored after it: chunked with it in sight
        context = await context_of_document(reader, turn)
        chunks = await reader.chunks_of(turn.id)
        if all(chunk.context == context for chunk in chunks):
            continue
        whole = await reader.document_by_id(turn.id)
        if whole is None:
            continue  # deleted meanwhile
        parts = chat_logs.cut(whole.content).chunks
        own = {p.chunk.position for p in parts if p.context is not None}
        stale += [
            Restated(turn, chunk, context)
            for chunk in chunks
            if chunk.position not in own and chunk.context != context
        ]
    return stale
