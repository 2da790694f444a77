"""A write's index changes, applied once it commits: on a real SQLite store, with the loaded
indexes recall searches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smemd.engine.core import Engine
from smemd.engine.index import loading, per_namespace
from smemd.engine.index.per_namespace import KINDS, Indexes
from smemd.store.protocol import Store, Writer
from smemd.store.records import IndexKind, Memory, NewMemory
from tests.conftest import Running
from tests.postgres import store_at
from tests.test_api import call
from tests.test_memory_api import settle

DIMENSION = 8
TEXT = "Caroline: The lighthouse keeper painted the rowing boat a bright shade of red last spring."


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = store_at(tmp_path / "s.sqlite3")
    await store.open()
    yield store
    await store.close()


def vector(i: int) -> np.ndarray:
    v = np.zeros(DIMENSION, dtype=np.float32)
    v[i % DIMENSION] = 1.0
    return v


async def insert(writer: Writer, i: int, namespace: str = "n") -> Memory:
    await writer.ensure_namespace(namespace, 1.0)
    new = NewMemory(id=f"mem_{i}", namespace=namespace, text=f"note {i}", type="fact",
                    root_id=f"mem_{i}")  # fmt: skip
    return await writer.insert_memory(new, vector(i), 1.0)


def found(indexes: Indexes, namespace: str, i: int) -> list[int]:
    loaded = indexes.loaded(namespace)
    assert loaded is not None
    return [seq for seq, _ in loaded.memories.vectors.search(vector(i), 5)]


async def test_changes_apply_after_the_commit_and_never_after_a_rollback(
    store: Store,
) -> None:
    async with store.write() as writer:
        await writer.ensure_namespace("n", 1.0)
    indexes = Indexes(store, DIMENSION)
    await indexes.get("n")

    with pytest.raises(RuntimeError):
        async with indexes.writing() as (writer, changes):
            memory = await insert(writer, 1)
            changes.add("n", "memories", [memory.seq], vector(1), [memory.text], [True])
            raise RuntimeError("the write fails after recording")
    assert found(indexes, "n", 1) == []
    async with store.read() as reader:
        assert await reader.memory("n", "mem_1") is None

    async with indexes.writing() as (writer, changes):
        memory = await insert(writer, 2)
        changes.add("n", "memories", [memory.seq], vector(2), [memory.text], [True])
        assert found(indexes, "n", 2) == []  # not before the commit
    assert found(indexes, "n", 2) == [memory.seq]

    # Recorded in order, applied in order: hidden, then shown again, in two commits.
    async with indexes.writing() as (_, changes):
        changes.set_live("n", "memories", memory.seq, False)
    assert found(indexes, "n", 2) == []
    async with indexes.writing() as (_, changes):
        changes.set_live("n", "memories", memory.seq, True)
    assert found(indexes, "n", 2) == [memory.seq]


async def test_a_namespace_not_loaded_is_read_at_its_load_and_a_dropped_one_forgotten(
    store: Store,
) -> None:
    indexes = Indexes(store, DIMENSION)
    async with indexes.writing() as (writer, changes):
        memory = await insert(writer, 3, "other")
        # Recorded for a namespace whose indexes are not loaded: never applied twice.
        changes.add("other", "memories", [memory.seq], vector(3), [memory.text], [True])
    assert indexes.loaded("other") is None
    loaded = await indexes.get("other")
    assert len(loaded.memories) == 1 and found(indexes, "other", 3) == [memory.seq]

    async with indexes.writing() as (_, changes):
        changes.drop("other")
    assert indexes.loaded("other") is None


async def test_writes_committed_while_a_namespace_loads_reach_its_indexes_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load paused at each step (before each kind's catch-up reads the store, and once the
    kind is loaded) while a write commits: the published indexes hold every row exactly once,
    as the store does."""
    async with store.write() as writer:
        await insert(writer, 0)
    reached: asyncio.Queue[str] = asyncio.Queue()
    go_on = asyncio.Event()

    async def pause(where: str) -> None:
        go_on.clear()
        await reached.put(where)
        await go_on.wait()

    real_catch_up, real_load_kind = loading.catch_up, per_namespace.load_kind

    async def catch_up(store: Store, namespace: str, kind: IndexKind, index: Any) -> int:
        await pause(f"{kind} before its catch-up")
        return await real_catch_up(store, namespace, kind, index)

    async def load_kind(
        store: Store, namespace: str, kind: IndexKind, *args: Any, **kw: Any
    ) -> Any:
        loaded = await real_load_kind(store, namespace, kind, *args, **kw)
        await pause(f"{kind} loaded")
        return loaded

    monkeypatch.setattr(loading, "catch_up", catch_up)
    monkeypatch.setattr(per_namespace, "load_kind", load_kind)
    indexes = Indexes(store, DIMENSION)
    load = asyncio.create_task(indexes.get("n"))
    steps = [f"{kind} {when}" for kind in KINDS for when in ("before its catch-up", "loaded")]
    for i, step in enumerate(steps, start=1):
        assert await asyncio.wait_for(reached.get(), 10) == step
        async with indexes.writing() as (writer, changes):
            memory = await insert(writer, i)
            changes.add("n", "memories", [memory.seq], vector(i), [memory.text], [True])
        if i == 2:  # and a change to a row the catch-up has read: mem_1 forgotten
            async with indexes.writing() as (writer, changes):
                await writer.set_forgotten("mem_1", 1.0, "test", 1.0)
                changes.set_live("n", "memories", memory.seq - 1, False)
        assert indexes.loaded("n") is None
        go_on.set()
    loaded = await asyncio.wait_for(load, 10)

    keys, live = loaded.memories.state()
    async with store.read() as reader:
        seqs, stored_live = await reader.index_states("n", "memories")
    assert keys.tolist() == seqs and len(seqs) == len(steps) + 1
    assert live.tolist() == stored_live == [True, False, True, True, True]
    assert len(loaded.memories.words) == len(seqs)


async def test_a_document_embedded_while_its_namespace_loads_is_in_the_loaded_indexes(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest worker's own writes, through the daemon: a document's chunks get their vectors
    while the namespace's load has read the store and not yet published. Its chunks must be in
    the indexes recall searches (they were left out until the next start)."""
    engine = engine_with_loads(running)
    held = HeldLoads(monkeypatch)
    load = asyncio.create_task(engine.indexes.get("n"))
    await asyncio.wait_for(held.read.wait(), 10)
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/n/document", json={"content": TEXT}
    )
    assert status == 200, body
    # Ingest goes on to its vectors; its reconciling then waits for the load.
    async with asyncio.timeout(30):
        while not await stored_states(engine.store, "chunks"):
            await asyncio.sleep(0.02)
    assert engine.indexes.loaded("n") is None
    held.go_on.set()
    loaded = await asyncio.wait_for(load, 10)
    await settle(running)

    for kind, index in loaded.kinds().items():
        keys, live = index.state()
        assert (keys.tolist(), live.tolist()) == await stored_states(engine.store, kind), kind
    assert len(loaded.chunks) >= 1


async def stored_states(store: Store, kind: IndexKind) -> tuple[list[int], list[bool]] | None:
    """The rows of namespace `n` an index of `kind` mirrors, and whether each is live; None
    while there are none."""
    async with store.read() as reader:
        seqs, live = await reader.index_states("n", kind)
    return (list(seqs), list(live)) if seqs else None


async def test_a_search_waiting_for_a_load_when_its_namespace_is_removed_reads_what_is_left(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing a namespace ends its load; a search that waited for that load loads again and
    answers from the store as it is now (its connection was dropped without a reply)."""
    engine = engine_with_loads(running)
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/n/document", json={"content": TEXT}
    )
    assert status == 200, body
    await settle(running)
    engine.indexes.forget("n")  # in memory no longer, as after a start
    held = HeldLoads(monkeypatch)
    search = asyncio.create_task(
        call(running.unix, "POST", "http://smemd/ns/n/search", json={"query": "rowing boat"})
    )
    await asyncio.wait_for(held.read.wait(), 10)
    status, body, _ = await call(running.unix, "DELETE", "http://smemd/ns/n")
    assert status == 200 and body["deletedDocumentsCount"] == 1, body
    held.go_on.set()
    status, body, _ = await asyncio.wait_for(search, 10)
    assert status == 200 and body["results"] == [], body


def engine_with_loads(running: Running) -> Engine:
    """The daemon's engine, if it loads namespaces' indexes (else the test is skipped)."""
    engine = running.daemon.state.engine
    assert engine is not None
    if not engine.indexes.in_memory:
        pytest.skip("the store answers searches itself: no namespace's indexes are loaded")
    return engine


class HeldLoads:
    """Every namespace load, held once it has read the store (its last kind, chunks) until
    `go_on` is set: `read` says one got there."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read = asyncio.Event()
        self.go_on = asyncio.Event()
        real_load_kind = per_namespace.load_kind

        async def load_kind(
            store: Store, namespace: str, kind: IndexKind, *a: Any, **kw: Any
        ) -> Any:
            loaded = await real_load_kind(store, namespace, kind, *a, **kw)
            if kind == "chunks":
                self.read.set()
                await self.go_on.wait()
            return loaded

        monkeypatch.setattr(per_namespace, "load_kind", load_kind)
