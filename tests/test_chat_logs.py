"""A chat log sent as JSON is read as a transcript: by the reader alone, then through the real
daemon, as memorybench's Supermemory provider sends a session (its content a line of its own and
the session's messages as JSON, its date in its metadata)."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from smemd.engine.ingest import chat_logs, worker
from smemd.engine.ingest.chat_logs import MAX_TRIES, Piece, cut, is_caption, pieces, speakers
from smemd.engine.recall.scoring import Passage
from smemd.engine.recall.speakers import passage_source, passage_speaker
from smemd.engine.transcripts import opening_of
from smemd.instants import parse
from smemd.protocol.exports import ChunkRecord, DocumentRecord
from smemd.store.records import Chunk, Document
from tests.conftest import Running
from tests.test_api import call
from tests.test_export import records
from tests.test_import import exported as export_of
from tests.test_memory_api import settle

SESSION = [
    {"role": "user", "content": "Hey Mel! How have you been?", "speaker": "Caroline"},
    {"role": "assistant", "content": "Swamped with the kids & work. Anything new?",
     "speaker": "Melanie"},
    {"role": "user", "content": "I went to a support group yesterday. It was so powerful.",
     "speaker": "Caroline"},
]  # fmt: skip
# memorybench's provider sends each session after a caption that says only when it was.
PREAMBLE = (
    "Here is the date the following session took place: 1:56 pm on 8 May, 2023\n\n"
    "Here is the session as a stringified JSON:\n"
)
# Text of its own around a log.
NOTE = "Notes from our call about the adoption agencies:\n"


def test_each_message_of_a_log_is_a_turn_read_with_the_short_turn_before_it() -> None:
    content = NOTE + json.dumps(SESSION, separators=(",", ":"))
    assert pieces(content) == [
        Piece(NOTE, None),  # the document's own context, as any text
        Piece("Caroline: Hey Mel! How have you been?", ""),
        Piece(
            "Melanie: Swamped with the kids & work. Anything new?",
            "Caroline: Hey Mel! How have you been?",
        ),
        Piece(
            "Caroline: I went to a support group yesterday. It was so powerful.",
            "Melanie: Swamped with the kids & work. Anything new?",
        ),
    ]
    assert speakers(content) == {"Caroline", "Melanie"}
    # A caption is no piece: the messages' contexts are as they were.
    assert pieces(PREAMBLE + json.dumps(SESSION)) == pieces(content)[1:]


def test_text_around_a_log_that_says_only_that_it_follows_and_when_is_its_caption() -> None:
    for caption in [
        PREAMBLE,
        "Here is the session as a stringified JSON:",
        "Session date: 2023-05-08T13:56:00.000Z",
        "The following conversation took place on Monday, 8 May 2023 at 13:56 UTC.",
        "Chat history (2024-03-01 10:00:00+01:00):",
        "Messages:",
        "\n\n",
        "",
    ]:
        assert is_caption(caption), caption
    for text in [
        NOTE,
        "Here is what Bob said:",
        "We moved the database to Postgres in May.",
        "Transcript of the call with ACME on 8 May 2023:",
        "Session date: 8 May 2023. " * 20,  # past a caption's length
    ]:
        assert not is_caption(text), text


def test_a_caption_tells_when_its_log_took_place() -> None:
    log = json.dumps(SESSION)
    may_8 = 1683554160.0  # 2023-05-08T13:56:00Z
    for content, told in [
        (PREAMBLE + log, may_8),
        ("Session date: 2023-05-08T13:56:00Z\n" + log, may_8),
        ("The following conversation took place on 8 May 2023 at 13:56.\n" + log, may_8),
        (log + "\n\nRecorded 8 May, 2023, 1:56 p.m.", may_8),  # after it
        ("Session date: 2023-05-08\n" + log, may_8 - 13 * 3600 - 56 * 60),  # its day alone
        ("Here is the session as a stringified JSON:\n" + log, None),  # no date
        # Text of its own is a passage, whatever date it names, and tells none.
        ("Transcript of the call with ACME on 8 May 2023:\n" + log, None),
        ("Session date: 2023-05-08 13:56", None),  # no log: the text is what was sent
    ]:
        assert cut(content).told == told, content
    # The caption is no chunk.
    assert [p.chunk.text for p in cut(PREAMBLE + log).chunks] == [p.text for p in pieces(log)]


def test_a_log_without_a_caption_is_dated_by_the_earliest_time_its_messages_state() -> None:
    may_8 = 1683554160.0  # 2023-05-08T13:56:00Z

    def sent(*times: object, field: str = "timestamp") -> str:
        """SESSION with these times, in order (None for the messages after them)."""
        times = (*times, *[None] * (len(SESSION) - len(times)))
        return json.dumps([{**m, field: t} for m, t in zip(SESSION, times, strict=True)])

    for content, told in [
        (sent("2023-05-08T13:57:00Z", "2023-05-08T13:56:00Z"), may_8),  # the earliest
        (sent("2023-05-08T13:56:00+00:00", field="date"), may_8),  # Telegram's name
        (sent(may_8 * 1000, may_8 * 1000 + 60_000), may_8),  # Unix milliseconds
        (sent(None, "2023-05-08T13:56:00Z"), may_8),  # not every message says
        (PREAMBLE.replace("8 May", "9 May") + sent("2023-05-08T13:56:00Z"), may_8 + 86400),
        (sent("yesterday", "soon"), None),  # what reads as no date dates nothing
        (sent(True, field="timestamp"), None),
    ]:
        assert cut(content).told == told, content
    # What a message states of when it was sent is no part of what it said.
    assert [p.chunk.text for p in cut(sent(may_8, may_8)).chunks] == [
        p.text for p in pieces(json.dumps(SESSION))
    ]


def test_roles_speak_when_no_name_does_and_text_comes_in_parts_or_not_at_all() -> None:
    log = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is  2+2?"},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "t1"}]},
        {"role": "assistant", "name": "Ada", "content": "4.\n\n```py\nprint(2 + 2)\n```"},
        {"role": "assistant", "name": "Ada", "content": "Anything else?"},
    ]  # fmt: skip
    found = pieces(json.dumps(log, indent=2) + "\n\nAda logged off at noon.")
    assert [piece.text for piece in found] == [
        "system: Be brief.",
        "user: What is  2+2?",
        "Ada: 4.\n\n```py\nprint(2 + 2)\n```",
        "Ada: Anything else?",
        "\n\nAda logged off at noon.",
    ]
    # A message that goes on its speaker's last is read with the turns before that too, as
    # far as they fit, each on a line.
    assert (
        found[3].context == "system: Be brief.\nuser: What is 2+2?\nAda: 4. ```py print(2 + 2) ```"
    )
    assert found[4].context is None
    assert speakers(json.dumps(log)) == {"system", "user", "Ada"}


def test_a_fact_of_a_message_keeps_its_speaker_whatever_the_name() -> None:
    """A chat log's names are its own ("bob_smith", "system"), not only a transcript's
    ("Caroline:"): facts are cut from what was said after any of them."""
    content = json.dumps([{"name": "bob_smith", "content": "I moved to Leeds."},
                          {"role": "system", "content": "Be brief."}])  # fmt: skip
    known = speakers(content)
    assert [opening_of(p.text, known) for p in pieces(content)] == [
        ("bob_smith: ", "I moved to Leeds."),
        ("system: ", "Be brief."),
    ]
    assert opening_of("bob_smith: I moved to Leeds.") == ("", "bob_smith: I moved to Leeds.")
    assert opening_of("Caroline: I moved.") == ("Caroline: ", "I moved.")


def test_what_is_no_chat_log_stays_as_it_was_sent() -> None:
    for content in [
        "No JSON here, only {braces}.",
        '[{"id": 1, "price": 3}, {"id": 2, "price": 4}]',  # records, not messages
        '[{"role": "user", "content": "hi"}, {"role": "user", "content": 7}]',  # a number
        '[{"role": "user", "content": "hi"}, "and a string"]',
        '[{"role": "user", "content": "cut off"',  # not JSON to its end
        'Inline [{"role": "user", "content": "not at a line start"}]',
        '[{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}]",  # too deep
        "[]",
        "",
    ]:
        assert pieces(content) == [Piece(content, None)]
        assert speakers(content) == frozenset()


def test_each_log_of_a_document_is_read_and_the_text_between_kept() -> None:
    one, two = json.dumps(SESSION[:1]), json.dumps(SESSION[1:2])
    content = f"At the cafe:\n{one}\nMonday:\n{two}\nLater, at the park:\n"
    assert [p.text for p in pieces(content)] == [
        "At the cafe:\n",
        "Caroline: Hey Mel! How have you been?",
        # "Monday:" only says when: a caption
        "Melanie: Swamped with the kids & work. Anything new?",
        "\nLater, at the park:\n",
    ]


def test_a_document_of_many_arrays_that_are_no_logs_is_read_a_bounded_number_of_times() -> None:
    not_logs = "\n".join(json.dumps([{"n": i}]) for i in range(MAX_TRIES))
    log = json.dumps(SESSION[:1])
    assert pieces(f"{not_logs}\n{log}") == [Piece(f"{not_logs}\n{log}", None)]  # as sent
    assert pieces(f"{log}\n{not_logs}")[0].text == "Caroline: Hey Mel! How have you been?"


async def add_v3(running: Running, body: dict[str, Any]) -> str:
    status, reply, _ = await call(running.unix, "POST", "http://smemd/v3/documents", json=body)
    assert status == 200, reply
    return str(reply["id"])


async def test_a_session_sent_as_memorybench_does_is_chunked_and_remembered_by_turn(
    running: Running,
) -> None:
    content = PREAMBLE + json.dumps(SESSION, separators=(",", ":"))
    doc_id = await add_v3(running, {
        "content": content, "containerTag": "bench",
        "metadata": {"sessionId": "conv-1-session_1", "date": "2023-05-08T13:56:00.000Z"},
    })  # fmt: skip
    await settle(running)
    status, doc, _ = await call(
        running.unix, "GET", f"http://smemd/ns/bench/document/{doc_id}?include=chunks,memories"
    )
    assert status == 200, doc
    assert doc["content"] == content  # as it was sent
    # A chunk a message, as if each had been sent alone; the caption is none.
    assert [chunk["content"] for chunk in doc["chunks"]] == [
        f"{m['speaker']}: {m['content']}" for m in SESSION
    ]
    memories = {m["memory"] for m in doc["memories"]}
    # Each fact keeps who said it, a later sentence of a turn too.
    assert "Caroline: It was so powerful." in memories, memories
    assert "Melanie: Swamped with the kids & work." in memories, memories
    assert not any('"' in memory for memory in memories), memories
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/ns/bench/search",
        json={"query": "Where did Caroline go yesterday?", "limit": 3},
    )  # fmt: skip
    assert status == 200, found
    assert found["results"][0]["memory"].startswith("Caroline: I went to a support group"), found
    # A question that names the session's date finds what was said then, and never the
    # caption that says when it was: every passage is in these results.
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/ns/bench/search",
        json={"query": "What did Caroline say on 8 May, 2023?", "limit": 20, "threshold": 0},
    )  # fmt: skip
    assert status == 200, found
    said = [r.get("memory") or r["chunk"] for r in found["results"]]
    assert said[0].startswith("Caroline: "), said
    assert not any("took place" in text or "JSON" in text for text in said), said
    # memorybench's answering model reads when each result was said from its metadata alone.
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/v4/search",
        json={"q": "Where did Caroline go yesterday?", "containerTag": "bench", "limit": 10,
              "threshold": 0.3, "searchMode": "hybrid", "include": {"chunks": True}},
    )  # fmt: skip
    assert status == 200, found
    assert found["results"], found
    for result in found["results"]:
        told = result["metadata"]["temporalContext"]
        assert told["documentDate"] == "2023-05-08T13:56:00.000Z", result
        assert result["metadata"]["sessionId"] == "conv-1-session_1", result
    # A date a client gives a memory is shown as it gave it.
    update = {"containerTag": "bench", "id": found["results"][0]["id"], "newContent":
              "Caroline went to a support group.", "temporalContext": {"eventDate": ["2023-05-07"]}}  # fmt: skip
    status, out, _ = await call(running.unix, "PATCH", "http://smemd/v4/memories", json=update)
    assert status == 200, out
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/v4/search",
        json={"q": "Caroline went to a support group", "containerTag": "bench"},
    )  # fmt: skip
    assert status == 200, found
    mine = [r for r in found["results"] if r["id"] == out["id"]]
    assert mine and mine[0]["metadata"]["temporalContext"] == {"eventDate": ["2023-05-07"]}, found


async def documents_dates(running: Running, namespace: str, question: str) -> set[str]:
    """The dates of the documents whose passages a search finds, as v4 shows them."""
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/v4/search",
        json={"q": question, "containerTag": namespace, "limit": 10, "threshold": 0},
    )  # fmt: skip
    assert status == 200, found
    return {r["metadata"]["temporalContext"].get("documentDate") for r in found["results"]}


async def test_a_log_sent_without_a_date_is_dated_by_its_caption(running: Running) -> None:
    undated = await add_v3(running, {
        "content": PREAMBLE + json.dumps(SESSION), "containerTag": "dated",
        "metadata": {"sessionId": "s1"},
    })  # fmt: skip
    # A date its add or metadata gives is its date, whatever its caption says.
    later = [{"role": "user", "speaker": "Caroline", "content": "The adoption agency called."}]
    await add_v3(running, {
        "content": PREAMBLE + json.dumps(later), "containerTag": "dated",
        "metadata": {"sessionId": "s2", "date": "2023-06-01T09:00:00.000Z"},
    })  # fmt: skip
    await settle(running)
    assert await documents_dates(running, "dated", "Where did Caroline go?") >= {
        "2023-05-08T13:56:00.000Z"
    }
    assert await documents_dates(running, "dated", "Who called Caroline?") >= {
        "2023-06-01T09:00:00.000Z"
    }
    # A revision's caption leaves the date it has.
    status, reply, _ = await call(
        running.unix, "PATCH", f"http://smemd/ns/dated/document/{undated}",
        json={"content": PREAMBLE.replace("8 May", "9 June") + json.dumps(SESSION[:2])},
    )  # fmt: skip
    assert status == 200, reply
    await settle(running)
    assert await documents_dates(running, "dated", "What has Melanie been swamped with?") == {
        "2023-05-08T13:56:00.000Z",
        "2023-06-01T09:00:00.000Z",
    }
    # The day it names now finds what was said that day first.
    status, found, _ = await call(
        running.unix, "POST", "http://smemd/ns/dated/search",
        json={"query": "What did Caroline say on 8 May, 2023?", "limit": 3, "threshold": 0},
    )  # fmt: skip
    assert status == 200, found
    first = found["results"][0]
    assert "adoption agency" not in (first.get("memory") or first["chunk"]), found


async def test_a_log_sent_without_a_date_or_caption_is_dated_by_its_messages(
    running: Running,
) -> None:
    # As a chat's export writes its messages: each with when it was sent.
    exported = [
        {"author": "Caroline", "content": "I went to a support group.",
         "timestamp": "2023-05-08T13:56:00.000+00:00"},
        {"author": "Melanie", "content": "That is so brave of you!",
         "timestamp": "2023-05-08T13:58:00.000+00:00"},
    ]  # fmt: skip
    await add_v3(running, {"content": json.dumps(exported), "containerTag": "exported"})
    await settle(running)
    (document,) = [r for r in records(await export_of(running, "exported"))
                   if isinstance(r, DocumentRecord)]  # fmt: skip
    assert document.content_date == parse("2023-05-08T13:56:00Z")  # the earliest
    # Each result says when its own message was said (tests/test_chat_log_times.py).
    assert await documents_dates(running, "exported", "Where did Caroline go?") == {
        "2023-05-08T13:56:00.000Z",
        "2023-05-08T13:58:00.000Z",
    }


async def test_a_date_given_while_its_log_is_read_is_the_one_it_keeps(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reads a log off the loop, and its caption's date is written only if the
    document is still undated when the chunks are: a date given meanwhile stays."""
    reading, go_on = threading.Event(), threading.Event()

    def held_cut(content: str) -> chat_logs.Cut:
        reading.set()
        go_on.wait(30)
        return chat_logs.cut(content)

    # The worker's reading alone: the add's own count of chunks reads as before.
    monkeypatch.setattr(worker, "chat_logs", SimpleNamespace(cut=held_cut))
    try:
        doc_id = await add_v3(running, {
            "content": PREAMBLE + json.dumps(SESSION), "containerTag": "raced",
            "metadata": {"sessionId": "s1"},
        })  # fmt: skip
        assert await asyncio.to_thread(reading.wait, 30), "the worker never read the log"
        status, reply, _ = await call(
            running.unix, "PATCH", f"http://smemd/ns/raced/document/{doc_id}",
            json={"date": "2023-07-04T10:00:00.000Z"},
        )  # fmt: skip
        assert status == 200, reply
    finally:
        go_on.set()
    await settle(running)
    assert await documents_dates(running, "raced", "Where did Caroline go?") == {
        "2023-07-04T10:00:00.000Z"
    }


async def test_a_question_about_one_speaker_of_a_chat_log_finds_their_turn(
    running: Running,
) -> None:
    # Words and meaning cannot tell the two turns apart: only who said which.
    log = [
        {"role": "user", "speaker": "Caroline",
         "content": "Melanie, I paint the lake at dawn most weekends."},
        {"role": "assistant", "speaker": "Melanie",
         "content": "Caroline, I paint the lake at dawn most weekends."},
    ]  # fmt: skip
    await add_v3(running, {
        "content": PREAMBLE + json.dumps(log), "containerTag": "painters",
        "metadata": {"date": "2023-05-08T13:56:00.000Z"},
    })  # fmt: skip
    await settle(running)
    for question, who in (
        ("What does Caroline paint at dawn?", "Caroline"),
        ("What does Melanie paint?", "Melanie"),
    ):
        status, found, _ = await call(
            running.unix, "POST", "http://smemd/ns/painters/search",
            json={"query": question, "limit": 2, "threshold": 0},
        )  # fmt: skip
        assert status == 200, found
        first = found["results"][0]
        assert (first.get("memory") or first["chunk"]).startswith(f"{who}: "), (question, found)


def stored_document(doc_id: str, content: str) -> Document:
    return Document(
        seq=1, id=doc_id, namespace="ns", caller_id=None, title=None, type="text",
        content=content, url=None, metadata={}, content_date=None, content_hash="",
        task_type="memory", status="done", error=None, revision=1, created_at=0.0,
        updated_at=0.0,
    )  # fmt: skip


def passage_of(chunk_id: str, doc_id: str, text: str) -> Passage:
    passage = Passage()
    passage.chunk = Chunk(
        seq=1, id=chunk_id, document_id=doc_id, namespace="ns", position=0, heading="",
        text=text, created_at=0.0,
    )  # fmt: skip
    return passage


def test_a_turn_of_a_chat_log_is_its_speaker_s_and_a_source_of_its_own() -> None:
    """Recall reads a chat log's turn as it reads a turn sent alone: said by the speaker it
    opens with, and its further results discounted among its own, not its session's."""
    documents = {
        "log": stored_document("log", PREAMBLE + json.dumps(SESSION)),
        "turn": stored_document("turn", "Caroline: Hey Mel! How have you been?"),
    }
    melanie = passage_of("c1", "log", "Melanie: Swamped with the kids & work. Anything new?")
    assert passage_speaker(melanie, documents) == {"melanie"}
    assert passage_source(melanie, documents) == "c1"
    note = passage_of("c0", "log", NOTE.strip())
    assert passage_speaker(note, documents) == frozenset()
    assert passage_source(note, documents) == "log"
    # A document that opens with its speaker is theirs, whatever a later chunk opens with.
    later = passage_of("c2", "turn", "Note: all of it, later.")
    assert passage_speaker(later, documents) == {"caroline"}
    assert passage_source(later, documents) == "turn"


async def test_a_turn_stored_late_before_a_chat_log_leaves_its_messages_their_own_turns(
    running: Running,
) -> None:
    """A turn dated before a log, and stored after it, is read again with the log's text around
    its messages (turn_contexts.py), never with its messages: each keeps the turn before it in
    the log."""
    log = NOTE + json.dumps(SESSION[:2])
    status, body, _ = await call(running.unix, "POST", "http://smemd/ns/late/document/batch", json={
        "documents": [{"content": log, "date": "2024-03-01T10:00:10Z"}]})  # fmt: skip
    assert status == 200, body
    await settle(running)
    late = "Sam: Who is around to chat?"
    status, body, _ = await call(running.unix, "POST", "http://smemd/ns/late/document/batch", json={
        "documents": [{"content": late, "date": "2024-03-01T10:00:00Z"}]})  # fmt: skip
    assert status == 200, body
    await settle(running)
    async with running.unix.get("http://smemd/ns/late/export") as response:
        found = records(await response.read())
    contexts = {r.text: r.context for r in found if isinstance(r, ChunkRecord)}
    first, second = (f"{m['speaker']}: {m['content']}" for m in SESSION[:2])
    assert contexts == {NOTE.strip(): late, first: "", second: first, late: ""}, contexts
