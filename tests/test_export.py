"""`GET /ns/{ns}/export` through the real daemon: the JSON Lines of smemd.protocol.exports, read
back with the protocol's own decoder; run on both stores (tests/conftest.py BACKEND_SUITES)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from smemd.protocol.exports import (
    AnyRecord,
    ChunkRecord,
    DocumentRecord,
    Header,
    MemoryRecord,
    NamespaceRecord,
    RelationRecord,
    SourceRecord,
    Trailer,
    record_name,
)
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, settle

decode_line = msgspec.json.Decoder(AnyRecord).decode


async def export(running: Running, *, gzip: bool = False) -> tuple[int, bytes, Any]:
    """The body (unpacked by the client when it came gzip'd) and the headers."""
    asked = {"Accept-Encoding": "gzip" if gzip else "identity"}
    async with running.unix.get(f"{NS}/export", headers=asked) as response:
        return response.status, await response.read(), response.headers


def records(body: bytes) -> list[AnyRecord]:
    assert body.endswith(b"\n")
    return [decode_line(line) for line in body.splitlines()]


def check_whole(found: list[AnyRecord]) -> None:
    """Header first, trailer last with the counts, and every reference held by a record."""
    assert isinstance(found[0], Header) and found[0].format == "smem-export"
    assert found[0].version == 1 and found[0].namespace == "people"
    trailer = found[-1]
    assert isinstance(trailer, Trailer)
    counted = Counter(record_name(type(r)) for r in found[1:-1])
    assert {k: v for k, v in trailer.records.items() if v} == dict(counted)
    assert counted["namespace"] == 1
    documents = {r.id for r in found if isinstance(r, DocumentRecord)}
    chunks = {r.id: r for r in found if isinstance(r, ChunkRecord)}
    memories = {r.id: r for r in found if isinstance(r, MemoryRecord)}
    assert all(c.document_id in documents for c in chunks.values())
    for memory in memories.values():
        assert memory.root_id in memories and (memory.parent_id in memories or not memory.parent_id)
        assert memory.document_id in documents or memory.document_id is None
    for source in (r for r in found if isinstance(r, SourceRecord)):
        assert source.memory_id in memories and source.document_id in documents
    for relation in (r for r in found if isinstance(r, RelationRecord)):
        assert relation.from_id in memories and relation.to_id in memories
    # One latest per chain.
    latest = Counter(m.root_id for m in memories.values() if m.is_latest)
    assert set(latest.values()) <= {1}


async def test_an_export_holds_every_version_source_and_relation_in_order(
    running: Running,
) -> None:
    await add(running, "Alex lives in Seattle.", id="a", metadata={"source": "chat"})
    await settle(running)
    await add(running, "Alex moved to Portland.", id="b")
    await add(running, "Sam owns a red kite.", id="c")
    await settle(running)
    status, body, headers = await export(running)
    assert status == 200, body
    assert headers["Content-Type"].startswith("application/x-ndjson")
    found = records(body)
    check_whole(found)
    kinds = [record_name(type(r)) for r in found]
    # Each kind after what it names: namespace, documents, chunks, memories, then the links.
    order = ["header", "namespace", "document", "chunk", "memory", "source"]
    firsts = [kinds.index(k) for k in order]
    assert firsts == sorted(firsts)
    documents = {r.caller_id or r.id: r for r in found if isinstance(r, DocumentRecord)}
    assert set(documents) >= {"a", "b", "c"}
    assert documents["a"].metadata == {"source": "chat"}
    memories = [r for r in found if isinstance(r, MemoryRecord)]
    texts = {m.text for m in memories}
    assert any("Seattle" in t for t in texts) and any("Portland" in t for t in texts)
    assert any(isinstance(r, NamespaceRecord) for r in found)


async def test_a_gzip_export_and_the_refusals(running: Running) -> None:
    await add(running, "Alex prefers tea.", id="g")
    await settle(running)
    status, plain, headers = await export(running)
    assert status == 200 and "Content-Encoding" not in headers
    assert 'filename="people.jsonl"' in headers["Content-Disposition"]
    status, unpacked, headers = await export(running, gzip=True)
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    # The same records but for the moment each was read at.
    assert records(unpacked)[1:] == records(plain)[1:]
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/nobody-here/export")
    assert_error(status, body, 404)
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/bad%20name!/export")
    assert_error(status, body, 400)


async def test_an_export_while_writes_go_on_is_whole_and_consistent(running: Running) -> None:
    for i in range(3):
        await add(running, f"Note {i}: the bridge opens at {i} am.", id=f"n{i}")
    await settle(running)

    async def keep_writing() -> None:
        for i in range(3, 23):
            await add(running, f"Note {i}: the ferry leaves at {i} pm.", id=f"n{i}")

    writing = asyncio.create_task(keep_writing())
    exported = [await export(running) for _ in range(3)]
    await writing
    for status, body, _ in exported:
        assert status == 200
        check_whole(records(body))


async def test_a_read_token_exports_its_own_namespaces_only(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    reader = "export-reader-secret-01"
    running = await start_daemon(
        config_with_tokens(short_dir, token_table("reader", reader, "read", ["people"]))
    )
    await add(running, "Alex lives in Seattle.")
    status, _, _ = await call(
        running.unix, "POST", "http://smemd/ns/others/document", json={"content": "Sam sails."}
    )
    assert status == 200
    await settle(running)
    held = {"Authorization": f"Bearer {reader}"}
    status, body, _ = await call(running.tcp, "GET", running.url("/ns/people/export"), headers=held)
    assert status == 200
    check_whole(records(body.encode()))
    status, body, _ = await call(running.tcp, "GET", running.url("/ns/others/export"), headers=held)
    assert_error(status, body, 403)
    status, body, _ = await call(running.tcp, "GET", running.url("/ns/people/export"))
    assert_error(status, body, 401)


def test_the_format_names_what_the_store_holds() -> None:
    from typing import get_args

    from smemd.protocol import exports
    from smemd.store import records

    for name in ("RelationKind", "TypedBy", "LabelKind", "Phase", "MemoryType", "JudgeKind"):
        assert get_args(getattr(exports, name)) == get_args(getattr(records, name)), name
    assert get_args(exports.EntityKind) == get_args(records.EntityKind)
