"""Who said a passage, and whether the query asks about what they said.

A conversation stored turn by turn opens each document with its speaker: "Caroline: I went to a
support group", "User: how do I…", "assistant: Try…". A question about a person ("What did
Caroline…", "what did the assistant suggest") wants that person's turns over the other speaker's
turns on the same subject, which share its words and its meaning: the embedder cannot tell them
apart, and BM25 finds the name in the turns that address the person as well. A client that
keeps the speaker apart from the text names it in the document's metadata (`speaker`, `role`).

Between a user and an assistant the question's person says whose turn it wants: the user asks,
so "I", "me", "my" point at the user's turns, and "you said", "did you recommend" at the
assistant's. Both were measured on evidence recall over chit-chat and assistant chats (README:
Benchmarks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from smemd.engine.index.words import STOPWORDS
from smemd.engine.recall.scoring import Passage
from smemd.engine.transcripts import WORD, speaker_of, speaker_of_document
from smemd.store.records import Chunk, Document

USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "ai"})
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
# What the assistant said, asked about: "you mentioned", "you've recommended", "the list you
# provided", "did you say". A request ("can you recommend…") asks for something new, not this.
_SAID = (
    "said|told|mentioned|recommended|suggested|gave|provided|wrote|listed|explained|described|"
    "shared|showed|made|created|proposed|advised|outlined|named"
)
_SAY = (
    "say|tell|mention|recommend|suggest|give|provide|write|list|explain|describe|share|show|"
    "make|create|propose|advise|outline|name"
)
_ASKS_WHAT_YOU_SAID = re.compile(
    rf"\byou(?:'ve| have)?\s+(?:\w+\s+)?(?:{_SAID})\b|\bdid you\s+(?:\w+\s+)?(?:{_SAY})\b"
)


def asks_what_was_said(folded: str) -> bool:
    """Whether a (case-folded) query asks what the assistant said before."""
    return bool(_ASKS_WHAT_YOU_SAID.search(folded))


class QuerySpeakers:
    """What a query says of speakers: the words a name is looked up in, and whose turns its
    person points at in a conversation between a user and an assistant. Given the speakers
    of the passages it is ranked among, it wants those it names most fully: "Grad E" names
    Grad E in two words and every other grad in one."""

    __slots__ = ("fullest", "names", "roles")

    def __init__(self, text: str, speakers: Iterable[frozenset[str]] = ()) -> None:
        folded = text.casefold().replace("\u2019", "'")
        self.names = frozenset(WORD.findall(folded))
        if asks_what_was_said(folded):
            self.roles = ASSISTANT_ROLES
        elif not self.names.isdisjoint(_FIRST_PERSON):
            self.roles = USER_ROLES
        else:
            self.roles = frozenset()
        self.fullest = max(
            (len(self.names & s) for s in speakers if not self.names.isdisjoint(naming(s))),
            default=0,
        )

    def wants(self, speaker: frozenset[str]) -> bool:
        """Whether the query names this speaker (as fully as any other), or its person points
        at their role."""
        if not self.roles.isdisjoint(speaker):
            return True
        return not self.names.isdisjoint(naming(speaker)) and len(self.names & speaker) >= (
            self.fullest
        )


def naming(speaker: frozenset[str]) -> frozenset[str]:
    """The words of a speaker's name that name them. A word like "the" or "am" names nobody: a
    meeting's "The Chair" or "Vaughan Gething AM" is named by their other words, not by every
    question ("What did the minister say?"); a name that is only such a word ("Will") is still
    named by it. An initial alone names nobody ("What is E?"): it only tells apart those its
    other words name ("Grad E", "Grad A"), and a name of initials alone ("A", "J. K.") is
    named by none of its words."""
    words = frozenset(w for w in speaker if len(w) > 1)
    return words - STOPWORDS or words


# A word as a query writes it, and its possessive ("Caroline's").
_NAME_IN_QUERY = re.compile(r"\b([^\W\d_][^\W_]*)(?:['\u2019]s)?\b")


def may_name_someone(query: str) -> bool:
    """Whether the query has a word it writes capitalised that is not a small word ("What",
    "I"): a name, perhaps a speaker's."""
    return any(
        word[0].isupper() and word.casefold() not in STOPWORDS
        for word in (m.group(1) for m in _NAME_IN_QUERY.finditer(query))
    )


def without_speakers(query: str, speakers: Iterable[frozenset[str]]) -> str | None:
    """The query without the names of these speakers, for its vector: None when it names none
    of them (or is nothing but names).

    A turn opens with its speaker ("Caroline: I researched adoption agencies"), and so what a
    small embedder reads of a question that names them ("What did Caroline research?") is
    mostly the name: it draws each of their turns, "Caroline: Thanks!" as much as the answer,
    and the turns that address them. The name still says whose turns are wanted, through BM25
    and the speaker signal; the vector is left to read what the question asks. A word is a
    name only where the query writes it capitalised: a meeting's "User Interface" is named in
    "what did User Interface suggest", not in "the user interface"."""
    names = {word for speaker in speakers for word in naming(speaker)}
    if not names:
        return None

    def kept(word: re.Match[str]) -> str:
        name = word.group(1)
        return "" if name[0].isupper() and name.casefold() in names else word.group(0)

    left = " ".join(_NAME_IN_QUERY.sub(kept, query).split())
    return left if left != " ".join(query.split()) and _NAME_IN_QUERY.search(left) else None


def passage_speaker(passage: Passage, documents: dict[str, Document]) -> frozenset[str]:
    """A passage's speaker: its document's; else the one its chunk opens with, as a turn of a
    transcript sent whole does (a chat log is chunked a message at a time: chat_logs.py); else,
    for a memory whose document the search did not read, the one the memory opens with, as a
    fact read from a turn does."""
    if passage.chunk is not None:
        return chunk_speaker(passage.chunk, documents.get(passage.chunk.document_id))
    memory = passage.memories[0]
    document = documents.get(memory.document_id) if memory.document_id else None
    return speaker_of_document(document) if document is not None else speaker_of(memory.text)


def chunk_speaker(chunk: Chunk, document: Document | None) -> frozenset[str]:
    """A chunk's speaker: its document's, else the one it opens with."""
    own = speaker_of_document(document) if document is not None else frozenset()
    return own or speaker_of(chunk.text)


def passage_source(passage: Passage, documents: dict[str, Document]) -> str:
    """What a passage counts as one source of, whose further results follow others' best: its
    document; a turn of a transcript sent whole (a chunk that opens with its speaker, in a
    document that names none), its chunk, as if the turn had been sent alone; a memory of no
    chunk, its document, or itself when it has none."""
    if passage.chunk is not None:
        document_id = passage.chunk.document_id
        document = documents.get(document_id)
        unnamed = document is not None and not speaker_of_document(document)
        return passage.chunk.id if unnamed and speaker_of(passage.chunk.text) else document_id
    memory = passage.memories[0]
    return memory.document_id or memory.id
