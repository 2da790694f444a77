"""Who said a passage, and whether the query names them.

A conversation stored turn by turn opens each document with its speaker: "Caroline: I went to a
support group", "User: how do I…", "assistant: Try…". A question about a person ("What did
Caroline…", "what did the assistant suggest") wants that person's turns over the other speaker's
turns on the same subject, which share its words and its meaning: the embedder cannot tell them
apart, and BM25 finds the name in the turns that address the person as well. Measured on
evidence recall over chit-chat (README: Benchmarks).
"""

from __future__ import annotations

import re

from smemd.engine.recall.scoring import Passage
from smemd.store.records import Document

# Up to three words and a colon at the very start: "Caroline:", "Dr. Lee:", "user:". Longer
# openings before a colon are sentences ("The plan for Monday: …"), not a speaker.
_SPEAKER = re.compile(r"\s*([^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,2}):\s")
_WORD = re.compile(r"[^\W_]+")


def query_names(text: str) -> frozenset[str]:
    """The query's words, case-folded: what a speaker's name is looked up in."""
    return frozenset(_WORD.findall(text.casefold()))


def speaker_of(text: str) -> frozenset[str]:
    """The words of the speaker a text opens with ("Dr. Lee: …" -> {"dr", "lee"}), else none.
    Words of one letter are left out: an initial names nobody on its own."""
    opening = _SPEAKER.match(text[:64])
    if opening is None:
        return frozenset()
    return frozenset(w for w in _WORD.findall(opening.group(1).casefold()) if len(w) > 1)


def names_speaker(names: frozenset[str], passage: Passage, documents: dict[str, Document]) -> bool:
    """Whether the query names who said the passage: the speaker its document opens with, else
    (a memory whose document the search did not read) the one its memory opens with, as a fact
    read from a turn's first sentence does."""
    if not names:
        return False
    if passage.chunk is not None:
        document = documents.get(passage.chunk.document_id)
        text = document.content if document is not None else passage.chunk.text
    else:
        memory = passage.memories[0]
        document = documents.get(memory.document_id) if memory.document_id else None
        text = document.content if document is not None else memory.text
    return not names.isdisjoint(speaker_of(text))
