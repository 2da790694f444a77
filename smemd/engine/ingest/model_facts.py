"""Facts by LLM: a document's chunks in groups of ~3,000 characters, each read into a JSON list.

Each group is one schema-constrained chat: atomic, self-contained facts with a type, an event
date and their entities. A reply that is not a JSON list is an error, never "no facts"; a
malformed item is skipped with its reason logged.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable, Mapping, Sequence
from datetime import date
from typing import Any, Protocol

import msgspec

from smemd.engine.dates.relative import event_date
from smemd.engine.ingest.sentence_facts import FactKind
from smemd.errors import SmemError
from smemd.fleet.llama import Chat, Message

log = logging.getLogger("smemd.engine.ingest.model_facts")

GROUP_CHARS = 3000
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
KINDS: tuple[FactKind, ...] = ("fact", "preference", "episode")

SYSTEM = """\
You extract memories from a document. Read the text between the <document> tags and list the \
atomic, self-contained facts it states: one piece of information per item, each understandable \
without the document (name the people and things instead of "he", "it" or "this"; keep names, \
numbers and dates).
- "type": "preference" for what someone likes, dislikes, prefers or wants; "episode" for \
something that happened at a particular time; "fact" for anything else.
- "eventDate": for an episode, the day it happened as YYYY-MM-DD when the text states or implies \
it ("yesterday", "last Tuesday" count from the document's date); otherwise null.
- "entities": the people, places, organisations and things the fact is about.
Leave out greetings, questions and small talk. Answer with the JSON array alone: [] when the \
document states nothing worth remembering."""


class Chatter(Protocol):
    """What extraction needs of a model: LlamaClient, or a lane that picks the node."""

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int,
        json_schema: Mapping[str, Any] | None = None, timeout: float | None = None,
    ) -> Awaitable[Chat]: ...  # fmt: skip


class ExtractionFailed(SmemError):
    """The model answered, but not with a JSON list of facts."""

    status = 502
    code = "extraction_failed"


class Group(msgspec.Struct, frozen=True):
    """Consecutive chunks (their indexes in the document's list) read in one call."""

    chunks: tuple[int, ...]
    text: str


class LlmFact(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    type: FactKind
    event_date: date | None
    entities: tuple[str, ...]
    chunks: tuple[int, ...]  # the group it was read from


class _Item(msgspec.Struct, frozen=True):
    """One item of the reply as the schema asks for it; the date is checked apart."""

    text: str
    type: FactKind
    event_date: str | None = msgspec.field(default=None, name="eventDate")
    entities: list[str] = []


def fact_schema(max_facts: int = 40) -> dict[str, Any]:
    """The JSON schema of a reply: a list of at most `max_facts` facts."""
    day = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
    # Bounded strings: a small model that starts repeating itself stops within max_tokens.
    entity = {"type": "string", "minLength": 1, "maxLength": 80}
    item = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 400},
            "type": {"type": "string", "enum": list(KINDS)},
            "eventDate": {"anyOf": [day, {"type": "null"}]},
            "entities": {"type": "array", "items": entity, "maxItems": 8},
        },
        "required": ["text", "type", "eventDate", "entities"],
        "additionalProperties": False,
    }
    return {"type": "array", "items": item, "maxItems": max_facts}


def group_chunks(chunks: Sequence[str], *, target: int = GROUP_CHARS) -> list[Group]:
    """Consecutive chunks packed into groups of at most `target` characters (one larger chunk
    makes a group of its own)."""
    groups: list[Group] = []
    members: list[int] = []
    size = 0
    for index, text in enumerate(chunks):
        if members and size + 2 + len(text) > target:
            groups.append(_group(chunks, members))
            members, size = [], 0
        size += (2 if members else 0) + len(text)
        members.append(index)
    if members:
        groups.append(_group(chunks, members))
    return groups


def build_messages(
    text: str, *, source: str, document_date: date | None, supporting_context: str = ""
) -> list[Message]:
    """The system rules, then the date, what matters here, and the text inside its tags."""
    # The request opens with what to do, never with a title or heading path: given one first,
    # models answered by asking for the file instead of reading the text below.
    if document_date is None:
        dated = "The document's date is unknown: give eventDate only for dates the text states."
    else:
        dated = f"The document is dated {document_date:%A} {document_date.isoformat()}."
    lines = ["List the facts in the document below.", dated]
    if supporting_context.strip():
        lines.append(f"What matters in this collection: {supporting_context.strip()}")
    # The text cannot close its own tag: a "</document" inside it is escaped.
    body = text.replace("</document", "<\\/document")
    lines.append(f'<document source="{html.escape(source, quote=True)}">\n{body}\n</document>')
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(lines)}]


async def extract_facts(
    model: Chatter, chunks: Sequence[str], *, source: str, document_date: date | None,
    supporting_context: str = "", concurrency: int = 4, target: int = GROUP_CHARS,
    max_facts: int = 40, max_tokens: int = 2048, timeout: float | None = None,  # noqa: ASYNC109
) -> list[LlmFact]:  # fmt: skip
    """The facts of a document's chunks, in document order; the first failing group's error."""
    limit = asyncio.Semaphore(concurrency)
    schema = fact_schema(max_facts)

    async def read(number: int, group: Group) -> list[LlmFact]:
        messages = build_messages(
            group.text, source=source, document_date=document_date,
            supporting_context=supporting_context,
        )  # fmt: skip
        async with limit:
            chat = await model.chat(
                messages, max_tokens=max_tokens, json_schema=schema, timeout=timeout
            )
        where = f"{source}, group {number + 1}"
        return parse_facts(chat, group.chunks, document_date=document_date, where=where)

    groups = group_chunks(chunks, target=target)
    try:
        async with asyncio.TaskGroup() as tasks:
            reads = [tasks.create_task(read(n, g)) for n, g in enumerate(groups)]
    except ExceptionGroup as failed:
        # One group's error is the document's: the others were cancelled with it.
        raise failed.exceptions[0] from None
    return [fact for done in reads for fact in done.result()]


def parse_facts(
    chat: Chat, chunks: tuple[int, ...], *, document_date: date | None, where: str
) -> list[LlmFact]:
    """The valid, distinct facts of one reply; ExtractionFailed if it is not a JSON list."""
    if not chat.content.strip():
        raise ExtractionFailed(f"{where}: empty reply (finish_reason {chat.finish_reason!r})")
    try:
        items = msgspec.json.decode(chat.content)
    except msgspec.DecodeError as err:
        cut = " (cut at max_tokens)" if chat.finish_reason == "length" else ""
        raise ExtractionFailed(f"{where}: reply is not JSON{cut}: {err}") from err
    if not isinstance(items, list):
        raise ExtractionFailed(f"{where}: reply is a {type(items).__name__}, not a list")
    facts: list[LlmFact] = []
    seen: set[str] = set()
    for position, raw in enumerate(items):
        try:
            item = msgspec.convert(raw, _Item)
        except msgspec.ValidationError as err:
            log.warning("%s: item %d skipped: %s", where, position, err)
            continue
        text = " ".join(item.text.split())
        if not text or text.casefold() in seen:
            log.info("%s: item %d skipped: %s", where, position, "repeated" if text else "empty")
            continue
        seen.add(text.casefold())
        facts.append(
            LlmFact(
                text=text,
                type=item.type,
                event_date=event_date(text, _day(item.event_date, where), document_date),
                entities=tuple(dict.fromkeys(e.strip() for e in item.entities if e.strip())),
                chunks=chunks,
            )
        )
    return facts


def _day(stated: str | None, where: str) -> date | None:
    if stated is None:
        return None
    try:
        if not _ISO_DAY.fullmatch(stated):  # fromisoformat also takes "20250314", "2025-W11"
            raise ValueError(stated)
        return date.fromisoformat(stated)
    except ValueError:
        log.info("%s: eventDate %r is not a day; dropped", where, stated)
        return None


def _group(chunks: Sequence[str], members: list[int]) -> Group:
    return Group(tuple(members), "\n\n".join(chunks[i] for i in members))
