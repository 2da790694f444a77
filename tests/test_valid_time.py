"""Two times per memory: valid time orders versions and answers `asOf`, whatever order the
documents came in; record time answers `asOfRecorded`, what smem believed then."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smemd.engine.ingest.reconciling import valid_from
from smemd.store.records import Candidate, Document
from smemd.store.sqlite import schema
from smemd.store.sqlite.schema import MIGRATIONS
from smemd.store.sqlite.store import SqliteStore
from smemd.store.vectors import to_blob
from tests.conftest import Running
from tests.raw_sqlite import connection
from tests.settling import until_idle
from tests.test_api import call

# Where Alex lived, by the day each diary entry is dated.
MOVES = [
    ("Alex lives in Seattle.", "2024-01-15"),
    ("Alex lives in Portland.", "2024-06-01"),
    ("Alex lives in Denver.", "2025-02-01"),
    ("Alex lives in Austin.", "2025-08-20"),
]
_namespaces = itertools.count()


async def add(running: Running, ns: str, content: str, **fields: Any) -> None:
    status, body, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{ns}/document", json={"content": content, **fields}
    )
    assert status == 200, body


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def search(running: Running, ns: str, query: str, **options: Any) -> list[dict[str, Any]]:
    status, body, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{ns}/search",
        json={"query": query, "searchMode": "memories", "threshold": 0, **options},
    )  # fmt: skip
    assert status == 200, body
    return body["results"]


async def history(running: Running, ns: str, memory_id: str) -> list[dict[str, Any]]:
    status, body, _ = await call(
        running.unix, "GET", f"http://smemd/ns/{ns}/memories/{memory_id}/history"
    )
    assert status == 200, body
    return body["memories"]


@settings(
    max_examples=8, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(order=st.permutations(range(len(MOVES))))
async def test_the_history_is_the_same_whatever_the_ingest_order(
    running: Running, order: list[int]
) -> None:
    ns = f"order{next(_namespaces)}"
    for i in order:
        text, day = MOVES[i]
        await add(running, ns, text, date=f"{day}T12:00:00Z")
        await settle(running)  # one at a time, so the order is the one drawn
    (latest,) = [r for r in await search(running, ns, "Where does Alex live?") if r["isLatest"]]
    assert latest["memory"] == "Alex lives in Austin."
    chain = await history(running, ns, latest["id"])
    assert [(m["memory"], m["version"]) for m in chain] == [
        (text, n) for n, (text, _) in enumerate(MOVES, start=1)
    ]
    assert [m["isLatest"] for m in chain] == [False, False, False, True]
    assert [m["validFrom"][:10] for m in chain] == [day for _, day in MOVES]
    # Each version holds until the next begins; the root is the earliest.
    assert [m.get("validUntil") for m in chain] == [m["validFrom"] for m in chain[1:]] + [None]
    assert {m["rootId"] for m in chain} == {chain[0]["id"]}
    assert [m.get("parentId") for m in chain] == [None] + [m["id"] for m in chain[:-1]]


async def test_as_of_answers_by_valid_time_when_the_diary_came_after_the_move(
    running: Running,
) -> None:
    await add(running, "alex", "Alex lives in Portland.", date="2025-03-15T00:00:00Z")
    await settle(running)
    await asyncio.sleep(0.01)
    before_diary = time.time()
    await asyncio.sleep(0.01)
    # Imported today: an old diary entry, from before the move.
    await add(running, "alex", "Alex lives in Seattle.", date="2024-11-02T00:00:00Z")
    await settle(running)

    now = await search(running, "alex", "Where does Alex live?")
    assert now[0]["memory"] == "Alex lives in Portland." and now[0]["isLatest"]
    assert all(r["memory"] != "Alex lives in Seattle." for r in now)  # a past version

    january = await search(
        running, "alex", "Where did Alex live in January 2025?", asOf="2025-01-20T00:00:00Z"
    )
    assert [r["memory"] for r in january] == ["Alex lives in Seattle."]
    assert january[0]["validUntil"].startswith("2025-03-15")

    # What smem believed before the diary came: Portland, and nothing of Seattle.
    believed = await search(
        running, "alex", "Where does Alex live?", asOfRecorded=_iso(before_diary)
    )
    assert [r["memory"] for r in believed] == ["Alex lives in Portland."]
    # The diary never made Seattle the latest: no record time at which smem believed it.
    believed_now = await search(
        running, "alex", "Where does Alex live?", asOfRecorded=_iso(time.time())
    )
    assert [r["memory"] for r in believed_now] == ["Alex lives in Portland."]


async def test_a_fact_at_the_same_moment_with_another_value_contradicts(running: Running) -> None:
    await add(running, "sam", "Sam lives in Oslo.", date="2025-05-01T00:00:00Z")
    await settle(running)
    await add(running, "sam", "Sam lives in Bergen.", date="2025-05-01T00:00:00Z")
    await settle(running)
    results = await search(running, "sam", "Where does Sam live?")
    # Neither supersedes the other: both stay latest, linked for a person to review.
    assert {r["memory"] for r in results} == {"Sam lives in Oslo.", "Sam lives in Bergen."}
    assert all(r["isLatest"] and r["version"] == 1 for r in results)
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.read() as reader:
        relations = await reader.relations_of([r["id"] for r in results])
    assert [r.kind for r in relations] == ["contradicts"]
    status, review, _ = await call(running.unix, "GET", "http://smemd/ns/sam/review")
    assert status == 200, review
    ((pair),) = review["contradictions"]
    assert (pair["memory"]["memory"], pair["contradicts"]["memory"]) == (
        "Sam lives in Bergen.", "Sam lives in Oslo.",
    )  # fmt: skip


async def test_an_instant_that_is_not_one_is_a_400_naming_the_field(running: Running) -> None:
    for field in ("asOf", "asOfRecorded"):
        status, body, _ = await call(
            running.unix, "POST", "http://smemd/ns/x/search",
            json={"query": "where", field: "last tuesday"},
        )  # fmt: skip
        assert status == 400 and field in body["details"], body


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


async def test_a_store_from_the_previous_build_gets_valid_times_and_reordered_chains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made before valid time: a chain stored in ingest order (the later-dated document first),
    `valid_until` holding the record time of the supersede."""
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", MIGRATIONS[:3])
    store = SqliteStore(path)
    await store.open()
    blob = to_blob(np.ones(4, dtype=np.float32))
    async with store.write() as writer:
        await writer.ensure_namespace("old", 1.0)
        db = connection(writer)
        for doc_id, day in (("doc_june", 1717200000.0), ("doc_jan", 1705276800.0)):
            await db.execute(
                "INSERT INTO documents (id, namespace, content, content_date, content_hash,"
                " status, created_at, updated_at) VALUES (?, 'old', '', ?, '', 'done', 1, 1)",
                [doc_id, day],
            )
        # June's fact stored first (t=100), then January's, taken as its update (t=200).
        await db.executemany(
            "INSERT INTO memories (id, namespace, text, type, version, is_latest, root_id,"
            " parent_id, document_id, created_at, updated_at, event_at, valid_until, vector)"
            " VALUES (?, 'old', ?, 'fact', ?, ?, 'mem_june', ?, ?, ?, ?, NULL, ?, ?)",
            [
                ("mem_june", "Alex lives in Portland.", 1, 0, None, "doc_june", 100, 200, 200, blob),
                ("mem_jan", "Alex lives in Seattle.", 2, 1, "mem_june", "doc_jan", 200, 200, None, blob),
                ("mem_solo", "Alex likes tea.", 1, 1, None, None, 300, 300, None, blob),
            ],
        )  # fmt: skip
        await db.execute("UPDATE memories SET root_id = id WHERE id = 'mem_solo'")
        await db.execute(
            "INSERT INTO relations (from_id, to_id, kind, score, created_at)"
            " VALUES ('mem_jan', 'mem_june', 'updates', 0.9, 200)"
        )
    await store.close()
    monkeypatch.undo()

    store = SqliteStore(path)
    assert await store.open() == [name for name, _ in MIGRATIONS[3:]]
    async with store.read() as reader:
        chain = await reader.chain("mem_jan")
        (solo,) = await reader.memories_by_id(["mem_solo"])
        relations = await reader.relations_of(["mem_jan", "mem_june"])
    await store.close()
    assert [(m.id, m.version, m.is_latest) for m in chain] == [
        ("mem_jan", 1, False), ("mem_june", 2, True),
    ]  # fmt: skip
    jan, june = chain
    assert (jan.valid_from, june.valid_from) == (1705276800.0, 1717200000.0)
    assert jan.valid_until == june.valid_from and june.valid_until is None
    assert june.parent_id == "mem_jan" and june.root_id == jan.root_id == "mem_jan"
    # Record time: smem believed January's fact from t=200 — and superseded it as it was put
    # in the past; June's was the latest before (superseded at 200) and is again now.
    assert june.superseded_at is None and jan.superseded_at is not None
    assert solo.valid_from == 300 and solo.valid_until is None
    assert [(r.from_id, r.to_id, r.kind) for r in relations] == [("mem_june", "mem_jan", "updates")]


async def test_a_sentence_says_when_it_held(running: Running) -> None:
    await add(running, "lisbon", "I flew back from Lisbon yesterday.", date="2025-03-14T18:00:00Z")
    await settle(running)
    (found,) = await search(running, "lisbon", "When was I in Lisbon?")
    # Valid from the day "yesterday" names, read against the document's date.
    assert found["validFrom"].startswith("2025-03-13")


def test_valid_time_never_begins_after_the_fact_was_said() -> None:
    said = 1_700_000_000.0
    doc = Document(
        seq=1, id="doc_1", namespace="ns", caller_id=None, title=None, type="text", content="",
        url=None, metadata={}, content_date=said, content_hash="", task_type="memory",
        status="done", error=None, revision=1, created_at=said + 99, updated_at=said + 99,
    )  # fmt: skip

    def fact(event_at: float | None) -> Candidate:
        return Candidate(job_id="j", position=0, chunk_id="c", text="x", type="fact",
                         event_at=event_at)  # fmt: skip

    assert valid_from(fact(None), doc, None, said + 500) == said
    assert valid_from(fact(said - 86400), doc, None, said + 500) == said - 86400  # happened before
    # An appointment for later holds from when it was made: a change of it said afterwards
    # must be the later version, whatever day either names.
    assert valid_from(fact(said + 30 * 86400), doc, None, said + 500) == said
    # A chat log's message says when it was sent, which may be days after the log's first.
    sent = said + 3 * 86400
    assert valid_from(fact(None), doc, sent, said + 500) == sent
    assert valid_from(fact(said + 30 * 86400), doc, sent, said + 500) == sent
    undated = msgspec.structs.replace(doc, content_date=None)
    assert valid_from(fact(None), undated, None, said + 500) == said + 500
