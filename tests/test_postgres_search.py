"""Search in PostgreSQL itself (smemd.store.postgres.search) against what recall's in-memory
indexes answer for the same rows: the nearest vectors by the HNSW index, kept to the namespace
and its live rows; BM25 over the posting lists ranking as the in-memory BM25 does, the lists
following every write; rows found the moment they commit; and query text of any shape answered, never an error."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.words import query_terms
from smemd.store.postgres.store import PostgresReader, PostgresStore
from smemd.store.records import NewMemory
from tests import postgres

DIMENSION = 32
WORDS = (
    "river mountain violin garden kettle lantern harbor orchard comet glacier falcon meadow"
    " tunnel ember quartz saddle canyon pepper marble thistle beacon cobalt willow anchor"
).split()


@pytest.fixture
async def store(postgres_server: postgres.Server) -> AsyncIterator[PostgresStore]:
    dsn = postgres_server.database()
    store = PostgresStore(dsn)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
        postgres_server.drop(dsn)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.normal(size=(n, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def _fill(
    store: PostgresStore, namespace: str, texts: list[str], vectors: np.ndarray
) -> list[int]:
    async with store.write() as writer:
        await writer.ensure_namespace(namespace, time.time())
        items = []
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            memory_id = f"{namespace}-{i}"
            new = NewMemory(
                id=memory_id, namespace=namespace, text=text, type="fact", root_id=memory_id
            )
            items.append((new, vector))
        await writer.insert_memories(items, time.time())
    async with store.read() as reader:
        ids = [new.id for new, _ in items]
        rows = {m.id: m for m in await reader.memories_by_id(ids)}
    return [rows[i].seq for i in ids]


def _sentences(rng: np.random.Generator, n: int) -> list[str]:
    weights = 1 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 12), p=weights)) for _ in range(n)]


async def test_the_nearest_are_the_namespaces_live_rows_found_by_the_graph(
    store: PostgresStore,
) -> None:
    rng = np.random.default_rng(7)
    mine, theirs = _unit(rng, 1500), _unit(rng, 1500)
    seqs = await _fill(store, "mine", _sentences(rng, 1500), mine)
    await _fill(store, "theirs", _sentences(rng, 1500), theirs)
    await store.prepare_search(DIMENSION)
    with postgres.connect(store.database._dsn) as db:  # the index exists and is valid
        assert postgres.count(
            db, "SELECT count(*) FROM pg_indexes WHERE indexname = ?", [f"memories_embedding_{DIMENSION}"]
        ) == 1  # fmt: skip
    forgotten = seqs[:50]
    async with store.write() as writer:
        for seq in forgotten:
            await writer.set_forgotten(f"mine-{seqs.index(seq)}", time.time(), "test", time.time())
    live = np.ones(len(seqs), dtype=bool)
    live[:50] = False
    found_share: list[float] = []
    async with store.read() as reader:
        assert isinstance(reader, PostgresReader)
        for query in _unit(rng, 20):
            hits = await reader.nearest("mine", "memories", query, 10)
            exact = np.argsort(-(mine @ query) + np.where(live, 0, 9))[:10]
            assert {seq for seq, _ in hits} <= set(seqs[50:])  # the namespace's, live only
            assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
            found_share.append(len({s for s, _ in hits} & {seqs[i] for i in exact}) / 10)
            for seq, cosine in hits:  # halfvec keeps the cosine to three decimals
                assert cosine == pytest.approx(float(mine[seqs.index(seq)] @ query), abs=2e-3)
        among = seqs[:200]  # named rows: forgotten ones too, every distance computed
        hits = await reader.nearest("mine", "memories", mine[3], 5, among)
        assert hits[0][0] == seqs[3] and {s for s, _ in hits} <= set(among)
        cosines = await reader.cosines("memories", mine[0], [seqs[0], seqs[1], 10**9])
        assert cosines[0] == pytest.approx(1.0, abs=2e-3) and cosines[2] == 0.0
    assert float(np.median(found_share)) >= 0.9


async def test_bm25_in_the_database_ranks_as_the_in_memory_index_does(
    store: PostgresStore,
) -> None:
    rng = np.random.default_rng(11)
    texts = _sentences(rng, 800)
    seqs = await _fill(store, "words", texts, _unit(rng, 800))
    index = LexicalIndex()
    index.add(seqs, texts, [True] * len(seqs))
    overlaps: list[float] = []
    async with store.read() as reader:
        assert isinstance(reader, PostgresReader)
        for _ in range(30):
            query = " ".join(rng.choice(WORDS, size=2, replace=False))
            ours = await reader.matching("words", "memories", query, 10)
            theirs = index.search(query_terms(query), 10)
            assert ours[0][0] == theirs[0][0] or ours[0][1] == pytest.approx(theirs[0][1], rel=0.02)
            overlaps.append(len({s for s, _ in ours} & {s for s, _ in theirs}) / 10)
    assert float(np.median(overlaps)) >= 0.9


async def test_a_committed_row_is_found_at_once_and_any_query_text_is_answered(
    store: PostgresStore,
) -> None:
    rng = np.random.default_rng(3)
    vector = _unit(rng, 1)
    [seq] = await _fill(store, "fresh", ["the lighthouse keeper's logbook"], vector)
    async with store.read() as reader:
        assert isinstance(reader, PostgresReader)
        assert [s for s, _ in await reader.nearest("fresh", "memories", vector[0], 5)] == [seq]
        assert [s for s, _ in await reader.matching("fresh", "memories", "lighthouse", 5)] == [seq]
        for text in (
            "",
            "   ",
            "the and of",
            "C:\\path\\to 'quoted' & | ! <-> (",
            "\u00e9t\u00e9 \U0001f600",
            "a" * 3000,
        ):
            assert isinstance(await reader.matching("fresh", "memories", text, 5), list)
        assert await reader.matching("fresh", "memories", "logbook", 5, among=[]) == []
        assert await reader.matching("elsewhere", "memories", "logbook", 5) == []


async def test_the_posting_lists_follow_forgetting_deletes_and_moves(
    store: PostgresStore,
) -> None:
    # The 45 rows that say "harbor" most densely rank first; all but two of them are gone, so
    # the best rows scored first hold too few live ones and the search must look further.
    texts = [
        ("harbor " * 4 + "anchor") if i < 45 else f"harbor anchor meadow {i}" for i in range(60)
    ]
    seqs = await _fill(store, "docks", texts, _unit(np.random.default_rng(5), 60))
    async with store.write() as writer:
        for i in range(2, 45):
            await writer.set_forgotten(f"docks-{i}", 1.0, "test", 1.0)
        await writer.delete_memories(["docks-0"])
    async with store.read() as reader:
        assert isinstance(reader, PostgresReader)
        hits = await reader.matching("docks", "memories", "harbor", 10)
        found = [s for s, _ in hits]
        assert len(found) == 10 and found[0] == seqs[1]  # past the forgotten, to live ones
        assert not set(found) & set(seqs[:1] + seqs[2:45])
        # Named rows are searched whatever their state: the forgotten ones too.
        among = await reader.matching("docks", "memories", "harbor", 3, among=seqs[2:5])
        assert sorted(s for s, _ in among) == seqs[2:5]
    async with store.write() as writer:
        await writer.ensure_namespace("quay", 2.0)
        await writer.move_namespace("docks", "quay")
    async with store.read() as reader:
        assert isinstance(reader, PostgresReader)
        assert await reader.matching("docks", "memories", "harbor", 10) == []
        moved = await reader.matching("quay", "memories", "harbor", 10)
        assert [s for s, _ in moved] == found
