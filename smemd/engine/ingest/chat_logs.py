"""A chat log sent as JSON, read as the turns it holds.

Clients store conversations as the messages their model saw: `[{"role": "user", "content":
"…"}, …]`, alone or after a line of their own (memorybench's Supermemory provider sends each
session as "Here is the session as a stringified JSON:" and its messages, each with a `speaker`
too). Cut as text, such a log makes chunks and facts of JSON fragments that run across
messages (`Anything new?","speaker":"Melanie"},{"role":"user","content":"I went to…`): what
was said, and by whom, is lost in its punctuation. Read here, each message is a turn as if it
had been sent as a document of its own: "Melanie: Anything new?", chunked alone and read with
the short turn before it, each fact keeping its speaker (smemd.engine.ingest.extracting). The
text around a log is a passage of its own, unless it only says that the log follows and when
(`is_caption`): then the instant it tells dates a document sent without a date; a log with no
such caption whose messages state when they were sent (Discord's `timestamp`, Telegram's `date`:
the names a document's metadata is read under, smemd.engine.dates.stated) is dated by the
earliest. A log is one session, and a message that states when it was sent keeps that time
(`Part.said_at`): a history of many days sent as one document is found by the day a question
names, and its facts are dated by the day they were said. The document's content stays as it
was sent.

A log is a JSON array, opening a line, of objects that each say who speaks (`speaker`, `name`,
`author`, `sender` or `from`, else `role`) and what (`content`, `text`, `message` or `body`: a
string, or a list of parts with `text`, as OpenAI's API sends them). A message with no text (a
tool call) is left out; an array with anything else in it is not a chat log, and stays as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from smemd.engine.dates.mentions import without_times
from smemd.engine.dates.stated import ISO_INSTANT, stated_date, told_instant
from smemd.engine.index.words import STOPWORDS
from smemd.engine.ingest.chunking import CONTEXT_MAX_TURNS, Chunk, chunk_text, context_of

_ARRAY_OPENING = re.compile(r"^[ \t]*(\[)\s*\{", re.MULTILINE)
# Arrays tried per document: each try may read to its end, and a document of JSON that is no
# chat log would otherwise be read once for each of its lines.
MAX_TRIES = 16
SPEAKER_FIELDS = ("speaker", "name", "author", "sender", "from")
TEXT_FIELDS = ("content", "text", "message", "body")
MAX_SPEAKER_CHARS = 64  # a longer "name" is not one
MAX_CAPTION_CHARS = 300
# The words of a caption besides dates (smemd.engine.dates.mentions): what says a log follows,
# what it is, and the words of a time of day.
_FRAMING = frozenset(
    """here following follows below above session sessions conversation conversations chat
    chats log logs transcript transcripts dialogue dialog message messages history json
    stringified date time timestamp took take place held started began begins recorded pm am
    utc gmt morning afternoon evening day st nd rd th""".split()
)
_CAPTION_WORD = re.compile(r"[^\W\d_]+")


class Piece(NamedTuple):
    text: str
    # A message's context: the turns before it in its log, as a turn document's are the turns
    # before it in its session (chunking.context_of). None for the text around a log, which
    # takes its document's.
    context: str | None
    said_at: float | None = None  # when the message says it was sent (None: not said)


class Part(NamedTuple):
    """A chunk of a document, with what it takes from its message when it is a chat log's."""

    chunk: Chunk
    context: str | None  # None: its document's
    said_at: float | None  # None: when its document was


class Cut(msgspec.Struct, frozen=True):
    """A document's chunks, and the instant its log's caption tells, else the earliest its
    messages state."""

    chunks: list[Part]
    told: float | None


def pieces(content: str) -> list[Piece]:
    """The content cut where its chat logs start and end: the text around them as it is, and
    each message a piece of its own, "Speaker: what they said", read with the turns before it."""
    return _read(content)[0]


def _read(content: str) -> tuple[list[Piece], float | None]:
    """`pieces`, and the instant the first caption that tells one tells (a caption is no piece,
    but its date dates a document sent without one), else the earliest its messages state."""
    found: list[Piece] = []
    told: float | None = None
    done = 0  # the content before this is in `found`
    for start, end, turns, sent in _logs(content):
        told = _put_around(content[done:start], found, told)
        said = [f"{who}: {text}" for who, text in turns]
        for i, (who, _) in enumerate(turns):
            before = said[max(0, i - CONTEXT_MAX_TURNS) : i][::-1]
            goes_on = i > 0 and turns[i - 1][0] == who
            # When the message says it was sent, as a document's metadata does (`timestamp`).
            at = stated_date(sent[i])
            found.append(Piece(said[i], context_of(said[i], before, goes_on), at))
        done = end
    if not found:
        return [Piece(content, None)], None
    told = _put_around(content[done:], found, told)
    if told is None:
        told = min((p.said_at for p in found if p.said_at is not None), default=None)
    return found, told


def _put_around(text: str, found: list[Piece], told: float | None) -> float | None:
    """Text around a log: a piece of its own, or a caption; the instant told so far, else the
    one this caption tells."""
    if not is_caption(text):
        found.append(Piece(text, None))
    elif told is None and text.strip():
        return told_instant(text)
    return told


def is_caption(text: str) -> bool:
    """Whether text around a chat log says nothing but that the log follows and when: its
    words all framing, small words, dates and times ("Here is the session as a stringified
    JSON:", "Session date: 2023-05-08", "The following conversation took place at 1:56 pm on
    8 May, 2023"). Such a caption is no passage of its own: found first for every question
    that names a date, it would stand in the place of what was said then. Blank text is one."""
    if len(text) > MAX_CAPTION_CHARS:
        return False
    words = _CAPTION_WORD.findall(without_times(ISO_INSTANT.sub(" ", text)).lower())
    # A letter alone is part of a time ("1:56 p.m.") or a list's mark, not something said.
    return all(w in STOPWORDS or w in _FRAMING or len(w) == 1 for w in words)


def cut(content: str) -> Cut:
    """The content's chunks (`pieces`, each chunked) and the instant it tells (`Cut.told`)."""
    chunks: list[Part] = []
    found, told = _read(content)
    for piece in found:
        for chunk in chunk_text(piece.text):
            chunk = msgspec.structs.replace(chunk, position=len(chunks))
            chunks.append(Part(chunk, piece.context, piece.said_at))
    return Cut(chunks, told)


def count(content: str, limit: int) -> int:
    """How many chunks `cut` makes of the content, or, past `limit` messages, how many messages
    it holds (each is a chunk at least): a log of a million messages is not cut to find out."""
    messages = sum(len(log.turns) for log in _logs(content))
    return messages if messages > limit else len(cut(content).chunks)


def speakers(content: str) -> frozenset[str]:
    """Who speaks in the chat logs in the content, as `pieces` writes them."""
    return frozenset(who for log in _logs(content) for who, _ in log.turns)


class Log(NamedTuple):
    """A chat log found in a document's content."""

    start: int
    end: int
    turns: list[tuple[str, str]]  # (speaker, text)
    messages: list[dict[str, Any]]  # each turn's as sent: its time is read by `cut` alone


def _logs(content: str) -> Iterator[Log]:
    """Each chat log in the content: where it starts and ends, its turns and its messages."""
    if "{" not in content:
        return
    decoder = json.JSONDecoder()
    done = tries = 0
    for opening in _ARRAY_OPENING.finditer(content):
        start = opening.start(1)
        if start < done:
            continue  # inside a log already read
        if tries == MAX_TRIES:
            return
        tries += 1
        try:
            value, end = decoder.raw_decode(content, start)
        except (ValueError, RecursionError):  # not JSON to its end, or nested past reading
            continue
        turns, messages = _turns(value)
        if turns:
            yield Log(start, end, turns, messages)
            done = end


def _turns(value: Any) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """A log's turns, (speaker, text), and the messages they are, as sent; none if it is no
    log."""
    if not isinstance(value, list):
        return [], []
    turns, messages = [], []
    for message in value:
        if not isinstance(message, dict):
            return [], []
        speaker, text = _speaker(message), _text(message)
        if speaker is None or text is None:
            return [], []
        if text:
            turns.append((speaker, text))
            messages.append(message)
    return turns, messages


def _speaker(message: dict[str, Any]) -> str | None:
    for field in (*SPEAKER_FIELDS, "role"):
        name = message.get(field)
        if isinstance(name, str) and name.strip() and len(name) <= MAX_SPEAKER_CHARS:
            return " ".join(name.split())
    return None


def _text(message: dict[str, Any]) -> str | None:
    """What a message says ("" for none: a tool call's null content), or None when its content
    is something else than text."""
    for field in TEXT_FIELDS:
        if field not in message:
            continue
        said = message[field]
        if said is None:
            return ""
        if isinstance(said, str):
            return said.strip()
        if isinstance(said, list) and all(isinstance(part, dict) for part in said):
            texts = [part.get("text") for part in said]
            return "\n\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
        return None
    return None
