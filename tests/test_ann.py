"""The HNSW index behind `VectorIndex`: the same answers as the exact index on clustered
vectors, live rows and filters respected, removal, and its files refused when damaged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smemd.engine.index import ann as ann_module
from smemd.engine.index import files, saved
from smemd.engine.index.ann import AnnIndex
from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.files import IndexFileError
from smemd.engine.index.flat import FlatIndex
from smemd.engine.index.kinds import KindIndex
from smemd.engine.index.per_namespace import Indexes
from smemd.store.records import NewMemory
from smemd.store.sqlite.store import SqliteStore as Store

DIMENSION = 32


def clustered(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around 40 centres (as sentence embeddings cluster), and 30 queries."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIMENSION))
    rows = centres[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, DIMENSION))
    queries = centres[rng.integers(0, 40, 30)] + 0.6 * rng.standard_normal((30, DIMENSION))
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit.astype(np.float32), queries.astype(np.float32)


@pytest.fixture
def pair() -> tuple[AnnIndex, FlatIndex, np.ndarray, np.ndarray]:
    rows, queries = clustered(3000)
    keys = np.arange(3000) * 3 + 11
    live = np.random.default_rng(1).random(3000) > 0.2
    ann, flat = AnnIndex(DIMENSION), FlatIndex(DIMENSION, exact_up_to=10**9)
    for start in range(0, 3000, 500):  # in batches, as ingest adds them
        part = slice(start, start + 500)
        ann.add(keys[part].tolist(), rows[part], live[part].tolist())
    flat.add(keys.tolist(), rows, live.tolist())
    return ann, flat, queries, keys


def overlap(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> float:
    return len({k for k, _ in a} & {k for k, _ in b}) / max(len(b), 1)


def test_the_graph_finds_what_the_exact_scan_finds(pair: tuple) -> None:
    ann, flat, queries, keys = pair
    recall = [overlap(ann.search(q, 10), flat.search(q, 10)) for q in queries]
    assert np.mean(recall) >= 0.98
    found, exact = ann.search(queries[0], 5), flat.search(queries[0], 5)
    assert [k for k, _ in found] == [k for k, _ in exact]
    assert [s for _, s in found] == pytest.approx([s for _, s in exact], abs=1e-3)
    assert ann.cosines(queries[0], [int(keys[0]), 5]) == pytest.approx(
        flat.cosines(queries[0], [int(keys[0]), 5]), abs=1e-3
    )


def test_live_rows_filters_removal_and_restore(pair: tuple) -> None:
    ann, flat, queries, keys = pair
    among = set(keys[::7].tolist())  # a filter that keeps one row in seven
    assert overlap(ann.search(queries[1], 10, among), flat.search(queries[1], 10, among)) == 1.0
    assert all(k in among for k, _ in ann.search(queries[1], 10, among))
    best = ann.search(queries[2], 1)[0][0]
    ann.set_live(best, False)
    assert best not in {k for k, _ in ann.search(queries[2], 10)}
    ann.set_live(best, True)  # a restore needs no vector: the row never left the graph
    assert ann.search(queries[2], 1)[0][0] == best
    ann.remove([best])
    assert best not in {k for k, _ in ann.search(queries[2], 50)}
    assert len(ann) == 2999 and ann.cosines(queries[2], [best]) == [0.0]
    ann.add([best], np.ones((1, DIMENSION), np.float32), [True])  # and back, as a new row
    assert len(ann) == 3000


def test_a_saved_graph_loads_whole_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    rows, queries = clustered(500)
    kind = KindIndex(AnnIndex(DIMENSION), LexicalIndex())
    kind.add(list(range(1, 501)), rows, [f"row {i}" for i in range(500)], [True] * 500)
    kind.hold()
    saved.save(tmp_path, kind)
    kind.release()
    again = saved.load(tmp_path, DIMENSION)
    assert again.vectors.search(queries[0], 5) == kind.vectors.search(queries[0], 5)
    assert again.words.search(["row"], 3) == kind.words.search(["row"], 3)
    with pytest.raises(IndexFileError):
        saved.load(tmp_path, DIMENSION + 1)

    graph = next((tmp_path / "vectors").glob("graph.*"))
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped bit pattern in the middle of the vectors
    graph.write_bytes(bytes(data))
    with pytest.raises(IndexFileError, match="checksum"):
        saved.load(tmp_path, DIMENSION)
    graph.write_bytes(bytes(data[: len(data) // 3]))
    with pytest.raises(IndexFileError):
        saved.load(tmp_path, DIMENSION)
    (tmp_path / "vectors" / files.HEADER).unlink()
    with pytest.raises(IndexFileError):
        saved.load(tmp_path, DIMENSION)


def test_a_save_cut_short_leaves_the_last_one_loadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, queries = clustered(300)
    kind = KindIndex(AnnIndex(DIMENSION), LexicalIndex())
    kind.add(list(range(1, 301)), rows, ["x"] * 300, [True] * 300)
    saved.save(tmp_path, kind)
    before = kind.vectors.search(queries[0], 5)
    kind.add([1000], rows[:1] * -1, ["y"], [True])

    def crash(*_: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(files.os, "replace", crash)  # dies before the header names the new set
    with pytest.raises(OSError):
        saved.save(tmp_path, kind)
    monkeypatch.undo()
    assert saved.load(tmp_path, DIMENSION).vectors.search(queries[0], 5) == before


async def test_a_kind_grown_past_the_bound_becomes_a_graph_saved_and_caught_up(
    tmp_path: Path,
) -> None:
    rows, queries = clustered(120, seed=3)
    store = Store(tmp_path / "s.sqlite3")
    await store.open()

    async def insert(start: int, stop: int) -> None:
        async with store.write() as writer:
            await writer.ensure_namespace("n", 1.0)
            for i in range(start, stop):
                new = NewMemory(
                    id=f"mem_{i}", namespace="n", text=f"note {i}", type="fact",
                    root_id=f"mem_{i}",
                )  # fmt: skip
                await writer.insert_memory(new, rows[i], 1.0)

    try:
        await insert(0, 40)
        indexes = Indexes(store, DIMENSION, ann_from=50, directory=tmp_path / "indexes")
        loaded = await indexes.get("n")
        assert not loaded.memories.is_graph and len(loaded.memories) == 40
        await insert(40, 80)  # ingest adds to the loaded index as it stores
        async with store.read() as reader:
            fresh = await reader.memory_index_rows("n", 40, 100)
        loaded.memories.add(fresh.seqs, rows[40:80], fresh.texts, fresh.live)
        await indexes.save(grow=True)
        assert loaded.memories.is_graph and len(loaded.memories) == 80
        assert list((tmp_path / "indexes").glob("*/memories/vectors/header.json"))

        await insert(80, 120)  # written after the save, never told to this index: a restart
        again = await Indexes(store, DIMENSION, ann_from=50, directory=tmp_path / "indexes").get(
            "n"
        )
        assert again.memories.is_graph and len(again.memories) == 120
        exact = FlatIndex(DIMENSION, exact_up_to=10**9)
        async with store.read() as reader:
            every = await reader.memory_index_rows("n", 0, 1000)
        exact.add(every.seqs, rows[:120], every.live)
        for q in queries[:10]:
            assert overlap(again.memories.vectors.search(q, 5), exact.search(q, 5)) >= 0.8
        assert again.memories.words.search(["119"], 1)[0][0] == every.seqs[-1]
    finally:
        await store.close()


def test_changes_wait_while_held_and_holds_nest() -> None:
    rows, _ = clustered(10)
    kind = KindIndex(AnnIndex(DIMENSION), LexicalIndex())
    kind.add([1, 2], rows[:2], ["a", "b"], [True, True])
    kind.hold()
    kind.hold()  # a second save beside the first
    kind.add([3], rows[2:3], ["c"], [True])
    kind.set_live(1, False)
    assert len(kind) == 2 and kind.words.search(["c"], 1) == []
    kind.release()
    assert len(kind) == 2  # the other save still reads
    kind.release()
    assert len(kind) == 3 and kind.words.search(["c"], 1)[0][0] == 3
    assert 1 not in {k for k, _ in kind.vectors.search(rows[0], 3)}


def test_exact_scores_read_in_chunks_agree_with_the_flat_index(
    pair: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, flat, queries, keys = pair
    monkeypatch.setattr(ann_module, "SCORE_CHUNK", 97)  # many chunks, none a multiple of k
    among = set(keys[::2].tolist())
    for q in queries[:5]:
        found, exact = ann.search(q, 10, among), flat.search(q, 10, among)
        assert [k for k, _ in found] == [k for k, _ in exact]
