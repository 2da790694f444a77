"""A chat log whose messages state when they were sent, over several days, sent as one document:
each message keeps its time. By the reader alone, then through the real daemon: a question that
names a day finds what was said that day, a fact is dated by the day it was said, and an export
and its import keep each time."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp

from smemd.engine.ingest.chat_logs import cut
from smemd.engine.ingest.extracting import _read_by_llm
from smemd.fleet.llama import LlamaClient
from smemd.instants import iso, parse
from smemd.protocol.exports import ChunkRecord
from smemd.store.records import Chunk, Document, Job
from tests.conftest import Running
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import call
from tests.test_chat_logs import add_v3
from tests.test_export import records
from tests.test_import import databases, exported, other, post_import  # noqa: F401
from tests.test_memory_api import settle

# As a chat app exports a history: messages on days weeks apart (a question's day is a window of
# a few days), each saying when it was sent; what Ana baked differs only in what it was, so that
# the day a question names is what tells them apart.
HISTORY = [
    {"author": "Ana", "content": "I baked a loaf of rye bread today.",
     "timestamp": "2024-03-01T18:02:00.000+00:00"},
    {"author": "Ben", "content": "Nice, save me a slice.",
     "timestamp": "2024-03-01T18:05:00.000+00:00"},
    {"author": "Ana", "content": "I baked a tray of oat cookies today.",
     "timestamp": "2024-03-20T17:40:00.000+00:00"},
    {"author": "Ana", "content": "I baked a lemon cake today.",
     "timestamp": "2024-04-12T19:15:00.000+00:00"},
]  # fmt: skip
SENT = [parse(m["timestamp"]) for m in HISTORY]


def test_each_message_keeps_the_time_it_states_and_the_text_around_its_log_none() -> None:
    note = "Our baking chat, exported:\n"
    history = [*HISTORY, {"author": "Ben", "content": "Wow."}]  # one says nothing of when
    parts = cut(note + json.dumps(history)).chunks
    assert [p.said_at for p in parts] == [None, *SENT, None]
    assert parts[0].chunk.text == note.strip()
    assert cut(json.dumps(history)).told == SENT[0]  # the log is dated by its first
    # A message cut into several chunks keeps its time in each.
    long = [{**HISTORY[0], "content": "I baked rye bread today. " * 200}]
    parts = cut(json.dumps(long)).chunks
    assert len(parts) > 1 and {p.said_at for p in parts} == {SENT[0]}


async def search(running: Running, query: str, limit: int = 5) -> list[dict]:
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/ns/baking/search",
        json={"query": query, "limit": limit, "threshold": 0},
    )  # fmt: skip
    assert status == 200, found
    return list(found["results"])


async def test_a_history_of_many_days_in_one_document_is_found_by_the_day_it_was_said(
    running: Running,
    other: Running,  # noqa: F811 (the fixture imported above)
) -> None:
    doc_id = await add_v3(running, {"content": json.dumps(HISTORY), "containerTag": "baking"})
    await settle(running)
    status, doc, _ = await call(
        running.unix, "GET", f"http://smemd/ns/baking/document/{doc_id}?include=chunks"
    )
    assert status == 200, doc
    assert [c["saidAt"] for c in doc["chunks"]] == [iso(t) for t in SENT], doc
    for day, baked in [("20 March 2024", "oat cookies"), ("12 April 2024", "lemon cake"),
                       ("1 March 2024", "rye bread")]:  # fmt: skip
        first = (await search(running, f"What did Ana bake on {day}?"))[0]
        assert baked in (first.get("memory") or first["chunk"]), (day, first)
    # A fact holds from the day its message was said, not from the log's first.
    facts = [r for r in await search(running, "What did Ana bake?", limit=10)
             if r.get("memory", "").startswith("Ana: I baked")]  # fmt: skip
    assert len(facts) == 3, facts
    for fact in facts:
        sent = next(m["timestamp"] for m in HISTORY if m["content"] in fact["memory"])
        assert fact["validFrom"][:10] == sent[:10], fact
    # Each fact is dated by the day its message was sent, "today" read against that day, and
    # v4 says each result was said when its message was (memorybench's answering model reads
    # relative dates against documentDate), a chunk's too.
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/v4/search",
        json={"q": "What did Ana bake?", "containerTag": "baking", "limit": 10, "threshold": 0,
              "searchMode": "hybrid"},
    )  # fmt: skip
    assert status == 200, found
    results = [r for r in found["results"] if (r.get("memory") or r.get("chunk") or "").startswith(
        "Ana: I baked")]  # fmt: skip
    assert len([r for r in results if "memory" in r]) == 3, found
    assert len([r for r in results if "chunk" in r]) == 3, found
    for result in results:
        told = result["metadata"]["temporalContext"]
        sent = next(m["timestamp"] for m in HISTORY if m["content"] in (result.get("memory")
                    or result["chunk"]))  # fmt: skip
        assert told["documentDate"] == iso(parse(sent)), (result, told)
        if "memory" in result:
            assert told["eventDate"] == [f"{sent[:10]}T00:00:00.000Z"], (result, told)
    # An export keeps each message's time; an import puts it back.
    body = await exported(running, "baking")
    times = [r.said_at for r in records(body) if isinstance(r, ChunkRecord)]
    assert times == SENT
    status, reply = await post_import(other, body, ns="baking")
    assert status == 200, reply
    again = [r.said_at for r in records(await exported(other, "baking"))
             if isinstance(r, ChunkRecord)]  # fmt: skip
    assert again == SENT
    first = (await search(other, "What did Ana bake on 20 March 2024?"))[0]
    assert "oat cookies" in (first.get("memory") or first["chunk"]), first


def said_by_day(body: Mapping[str, Any]) -> str:
    """A model that reads each message as a fact of the day it is told, "today" left to smem."""
    text = str(body["messages"][-1]["content"])
    told = re.search(r"The document is dated \w+ (\d{4}-\d\d-\d\d)\.", text)
    assert told, text
    said = re.findall(r"^Ana: (.*)$", text, re.MULTILINE)
    return json.dumps([
        {"text": f"Ana: {line}", "type": "episode", "eventDate": None, "entities": ["Ana"]}
        for line in said
    ])  # fmt: skip


async def test_a_model_reads_each_day_of_a_history_with_its_own_date() -> None:
    at = SENT[0]
    doc = Document(
        seq=1, id="doc_1", namespace="baking", caller_id=None, title=None, type="text",
        content=json.dumps(HISTORY), url=None, metadata={}, content_date=at, content_hash="",
        task_type="memory", status="extracting", error=None, revision=1, created_at=at,
        updated_at=at,
    )  # fmt: skip
    job = Job(seq=1, id="job_1", namespace="baking", document_id=doc.id, revision=1,
              phase="extracting", attempts=0, error=None, created_at=at, updated_at=at)  # fmt: skip
    chunks = [
        Chunk(seq=n, id=f"chk_{n}", document_id=doc.id, namespace="baking", position=n,
              heading="", text=p.chunk.text, created_at=at, said_at=p.said_at)
        for n, p in enumerate(cut(doc.content).chunks)
    ]  # fmt: skip
    async with aiohttp.ClientSession() as session, FakeLlamaServer(chat=said_by_day) as fake:
        found = await _read_by_llm(LlamaClient(session, fake.url, node="fake"), job, doc,
                                   chunks, "", None)  # fmt: skip
    days = {c.text: datetime.fromtimestamp(c.event_at or 0, UTC).date().isoformat() for c in found}
    assert days == {
        f"Ana: {m['content']}": m["timestamp"][:10] for m in HISTORY if m["author"] == "Ana"
    }, days
    assert [c.position for c in found] == [0, 1, 2]
    assert {c.chunk_id for c in found} == {"chk_0", "chk_2", "chk_3"}
