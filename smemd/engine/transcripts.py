"""A transcript line's speaker: "Caroline: I moved." is Caroline's turn, said by her; and a
document's, which its metadata may name instead.

One pattern for everything that reads turns: ingest cuts facts from the text after the speaker
and gives each the speaker back, and reads a message that goes on its speaker's last with more
of the turns before it; entities take the speaker for a person; the fact judge reads "I" as the
speaker; recall favours the turns of a speaker the query asks about.
"""

from __future__ import annotations

import re

from smemd.store.records import Document

# Up to four capitalised words and a colon at the very start ("Caroline:", "Dr. Lee:"), or a
# chat role in lower case ("user:"); a chat log's time before it ("[10:32] Sam:") and bold
# ("**Sam:**") are allowed. An opening of lower-case words before a colon is a sentence ("so
# here's the plan: …"), not a speaker.
_SPEAKER = re.compile(
    r"\s*(?:\[[^\]\n]{1,30}\]\s*)?(?:\*\*|__)?"
    r"([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}|user|assistant|human|ai)"
    r"(?:\*\*|__)?:(?:\*\*|__)?\s+"
)


WORD = re.compile(r"[^\W_]+")  # a word of a name, or of a query that may name someone
SPEAKER_FIELDS = ("speaker", "role")  # metadata keys that name a document's speaker


def speaker_line(text: str) -> re.Match[str] | None:
    """The speaker `text` opens with: group 1 its name, `end()` where what they said begins."""
    return _SPEAKER.match(text)


def said_text(text: str) -> str:
    """What a transcript line says, after the speaker it opens with (all of it, without one)."""
    opening = speaker_line(text[:64])
    return text[opening.end() :] if opening is not None else text


def speaker_of(text: str) -> frozenset[str]:
    """The words of the speaker a text opens with ("Dr. Lee: …" -> {"dr", "lee"}, "Grad E: …" ->
    {"grad", "e"}), else none. An initial is kept: it tells a meeting's Grad E from Grad A, a
    transcript's Speaker A from Speaker B (smemd.engine.recall.speakers.naming says what names
    someone)."""
    opening = speaker_line(text[:64])
    return _name_words(opening.group(1)) if opening is not None else frozenset()


def speaker_of_document(document: Document) -> frozenset[str]:
    """A document's speaker: what its metadata names (`speaker` or `role`, as a client that keeps
    turns apart from their text sends them), else the one its content opens with."""
    for key in SPEAKER_FIELDS:
        named = document.metadata.get(key)
        if isinstance(named, str) and 0 < len(named) <= 64:
            return _name_words(named)
    return speaker_of(document.content)


def opening_of(text: str, speakers: frozenset[str] = frozenset()) -> tuple[str, str]:
    """The speaker a text opens with, as written ("Caroline: "), and what they said; ("", text)
    for none. Besides the names `speaker_line` knows, a chat log's own (smemd.engine.ingest.
    chat_logs writes each message "name: text", whatever the name: "bob_smith", "system")."""
    name, colon, said = text.partition(": ")
    if colon and name in speakers:
        return name + colon, said
    opening = speaker_line(text)
    return (opening.group(0), text[opening.end() :]) if opening else ("", text)


def goes_on(document: Document, previous: Document) -> bool:
    """Whether a document is its speaker's next turn after `previous`: a message of a burst."""
    speaker = speaker_of_document(document)
    return bool(speaker) and speaker_of_document(previous) == speaker


def is_turn(document: Document) -> bool:
    """Whether a document is a turn of a conversation: it says who speaks. An undated one is read
    with the undated turns stored before it; an agent's notes ("prefers dark mode") say no
    speaker and are read alone, as no one's context."""
    return bool(speaker_of_document(document))


def _name_words(name: str) -> frozenset[str]:
    return frozenset(WORD.findall(name.casefold()))
