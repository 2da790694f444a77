"""The store: migrations, vector BLOBs, and the embedder recorded with the vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smemd.config import EngineConfig
from smemd.engine.core import EmbedderMismatch, Engine
from smemd.fleet.builtin import HashedEmbedder
from smemd.store.opening import DATABASE_NAME
from smemd.store.records import NewMemory
from smemd.store.sqlite import schema
from smemd.store.sqlite.schema import MIGRATIONS
from smemd.store.sqlite.store import SqliteStore
from smemd.store.sqlite.store import SqliteStore as Store
from smemd.store.vectors import from_blob, stack, to_blob
from tests.raw_sqlite import connect, connection, rows


async def test_migrates_an_empty_database_and_then_applies_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    assert await store.open() == [name for name, _ in MIGRATIONS]
    await store.close()
    store = Store(tmp_path / "s.sqlite3")
    assert await store.open() == []
    await store.close()
    tables = {r[0] for r in rows(tmp_path / "s.sqlite3", "SELECT name FROM sqlite_master")}
    assert {
        "documents",
        "chunks",
        "memories",
        "jobs",
        "migrations",
    } <= tables
    assert not {"memories_fts", "chunks_fts"} & tables  # recall ranks words in memory


async def test_a_database_from_before_a_migration_gets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database made by the first migration alone, with a memory in it, gets the others."""
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", MIGRATIONS[:1])
    store = Store(path)
    await store.open()
    async with store.write() as writer:
        await writer.ensure_namespace("old", 1.0)
        # The columns of 0001: today's insert names columns added since.
        await connection(writer).execute(
            "INSERT INTO memories (id, namespace, text, type, root_id, created_at, updated_at,"
            " vector) VALUES ('mem_1', 'old', 'Alex lives in Seattle', 'fact', 'mem_1', 1, 1, ?)",
            [to_blob(np.ones(4, dtype=np.float32))],
        )
        await connection(writer).execute(
            "INSERT INTO memory_sources (memory_id, document_id, chunk_id, created_at)"
            " VALUES ('mem_1', 'doc_1', 'chk_1', 1)"
        )
    await store.close()
    monkeypatch.undo()
    store = Store(path)
    assert await store.open() == [name for name, _ in MIGRATIONS[1:]]
    async with store.read() as reader:
        indexed = await reader.memory_index_rows("old", 0, 10)
        (memory,) = await reader.memories_by_id(["mem_1"])
        backlog = await reader.dream_backlog()
    await store.close()
    assert indexed.texts == ["Alex lives in Seattle"]
    # Its type was the heuristic's: dreaming has it to type, and to look at for links.
    assert memory.typed_by is None and backlog == (1, 1)
    # Connectedness is counted for what was there: the one source.
    assert connections(path) == {"mem_1": 1}


def connections(path: Path) -> dict[str, int]:
    """Each memory's `connections` column, checked against a count of its sources and links
    (a contradiction is none)."""
    with connect(path) as db:
        kept = dict(db.execute("SELECT id, connections FROM memories"))
        counted = dict(
            db.execute(
                "SELECT m.id, (SELECT count(*) FROM memory_sources s WHERE s.memory_id = m.id)"
                " + (SELECT count(*) FROM relations r WHERE (r.from_id = m.id OR r.to_id = m.id)"
                " AND r.kind != 'contradicts')"
                " FROM memories m"
            )
        )
    assert kept == counted
    return kept


async def test_connections_follow_sources_and_links_through_every_write(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    await store.open()
    vector = np.ones(4, dtype=np.float32)
    async with store.write() as writer:
        await writer.ensure_namespace("n", 1.0)
        for i in (1, 2, 3):
            new = NewMemory(
                id=f"mem_{i}", namespace="n", text=f"fact {i}", type="fact", root_id=f"mem_{i}",
                document_id="doc_a", chunk_id="chk_a",
            )  # fmt: skip
            await writer.insert_memory(new, vector, 1.0)
        await writer.add_source("mem_1", "doc_a", "chk_a", 2.0)  # already there: ignored
        await writer.add_source("mem_1", "doc_b", "chk_b", 2.0)
        await writer.add_relation("mem_2", "mem_1", "extends", 0.9, 2.0)
        await writer.add_relation("mem_2", "mem_1", "extends", 0.95, 3.0)  # again: rescored
        await writer.add_relation("mem_3", "mem_1", "updates", 1.0, 2.0)
        await writer.add_relation("mem_3", "mem_2", "contradicts", 0.8, 2.0)
    assert connections(path) == {"mem_1": 4, "mem_2": 2, "mem_3": 2}
    async with store.write() as writer:
        await writer.remove_relation("mem_3", "mem_1", "updates")
        await writer.delete_document_rows("doc_b")
    assert connections(path) == {"mem_1": 2, "mem_2": 2, "mem_3": 1}
    async with store.write() as writer:
        await writer.delete_memories(["mem_2"])
    assert connections(path) == {"mem_1": 1, "mem_3": 1}
    await store.close()


async def test_contradictions_counted_before_their_migration_are_taken_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in MIGRATIONS if m[0] < "0005"])
    store = Store(path)
    await store.open()
    async with store.write() as writer:
        await writer.ensure_namespace("n", 1.0)
        for i in (1, 2, 3):
            new = NewMemory(
                id=f"mem_{i}", namespace="n", text=f"fact {i}", type="fact", root_id=f"mem_{i}",
            )  # fmt: skip
            await writer.insert_memory(new, np.ones(4, dtype=np.float32), 1.0)
        db = connection(writer)  # the rows of that schema, which today's inserts outgrew
        await db.executemany(
            "INSERT INTO memory_sources (memory_id, document_id, chunk_id, created_at)"
            " VALUES (?, 'doc_a', 'chk_a', 1)",
            [(f"mem_{i}",) for i in (1, 2, 3)],
        )
        await db.executemany(
            "INSERT INTO relations (from_id, to_id, kind, score, created_at)"
            " VALUES (?, ?, ?, 0.8, 2)",
            [("mem_2", "mem_1", "contradicts"), ("mem_3", "mem_1", "contradicts"),
             ("mem_3", "mem_2", "extends")],
        )  # fmt: skip
    await store.close()
    monkeypatch.undo()
    store = Store(path)
    assert await store.open() == [name for name, _ in MIGRATIONS[4:]]
    await store.close()
    assert connections(path) == {"mem_1": 1, "mem_2": 2, "mem_3": 2}


async def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    await store.open()
    with pytest.raises(RuntimeError):
        async with store.write() as writer:
            await writer.ensure_namespace("half", 1.0)
            raise RuntimeError("crash in the middle")
    async with store.read() as reader:
        assert await reader.namespace("half") is None
    await store.close()


def test_vector_blobs_round_trip_little_endian() -> None:
    vector = np.array([1.5, -2.25, 3.0e-8, np.float32(1) / 3], dtype=np.float32)
    blob = to_blob(vector)
    assert blob[:4] == np.float32(1.5).astype("<f4").tobytes()
    assert np.array_equal(from_blob(blob), vector)
    assert np.array_equal(stack([blob, blob], 4), np.vstack([vector, vector]))
    assert stack([], 4).shape == (0, 4)


def sqlite_store(state_dir: Path) -> SqliteStore:
    return SqliteStore(state_dir / DATABASE_NAME)


class OtherEmbedder(HashedEmbedder):
    name = "some-other-model"


async def test_vectors_from_another_embedder_are_refused(tmp_path: Path) -> None:
    first = Engine(sqlite_store(tmp_path), tmp_path, HashedEmbedder(), EngineConfig())
    await first.start()
    await first.stop()
    second = Engine(sqlite_store(tmp_path), tmp_path, OtherEmbedder(), EngineConfig())
    with pytest.raises(EmbedderMismatch, match="hashed-ngrams-384-v1/384"):
        await second.start()
    same = Engine(sqlite_store(tmp_path), tmp_path, HashedEmbedder(), EngineConfig())
    await same.start()
    await same.stop()
