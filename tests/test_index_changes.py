"""A write's index changes, applied once it commits: on a real SQLite store, with the loaded
indexes recall searches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from smemd.engine.index.per_namespace import Indexes
from smemd.store.protocol import Store, Writer
from smemd.store.records import Memory, NewMemory
from tests.postgres import store_at

DIMENSION = 8


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
