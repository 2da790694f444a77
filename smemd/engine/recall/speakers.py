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

from smemd.engine.index.words import STOPWORDS
from smemd.engine.recall.scoring import Passage
from smemd.engine.transcripts import WORD, speaker_of, speaker_of_document
from smemd.store.records import Document

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
    person points at in a conversation between a user and an assistant."""

    __slots__ = ("names", "roles")

    def __init__(self, text: str) -> None:
        folded = text.casefold().replace("\u2019", "'")
        self.names = frozenset(WORD.findall(folded))
        if asks_what_was_said(folded):
            self.roles = ASSISTANT_ROLES
        elif not self.names.isdisjoint(_FIRST_PERSON):
            self.roles = USER_ROLES
        else:
            self.roles = frozenset()

    def wants(self, speaker: frozenset[str]) -> bool:
        """Whether the query names this speaker, or its person points at their role. A word
        like "the" or "am" names nobody: a meeting's "The Chair" or "Vaughan Gething AM" is
        named by their other words, not by every question ("What did the minister say?"); a
        name that is only such a word ("Will") is still named by it."""
        named = speaker - STOPWORDS or speaker
        return not (self.names.isdisjoint(named) and self.roles.isdisjoint(speaker))


def passage_speaker(passage: Passage, documents: dict[str, Document]) -> frozenset[str]:
    """A passage's speaker: its document's, else (a memory whose document the search did not
    read) the one its memory opens with, as a fact read from a turn's first sentence does."""
    if passage.chunk is not None:
        document_id: str | None = passage.chunk.document_id
        fallback = passage.chunk.text
    else:
        document_id, fallback = passage.memories[0].document_id, passage.memories[0].text
    document = documents.get(document_id) if document_id else None
    return speaker_of_document(document) if document is not None else speaker_of(fallback)
