"""A search costs a bounded number of store reads, whatever its `limit`: its hits come hydrated
(their documents, chunks and related memories) in batch reads, not one read per hit.

The real daemon's store is wrapped so that every reader, scanner and writer it hands out, and
every call made on them, is counted, but only for the request being measured: the daemon tags
each request with its `X-Request-Id`, and tasks it starts carry the tag on.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from smemd.api.middleware import REQUEST_ID_HEADER, request_id
from smemd.engine.core import Engine
from smemd.engine.memories import RELATED_STEPS, SIBLING_KINDS, Related
from smemd.engine.recall.hybrid import Hit
from smemd.store.protocol import Store
from smemd.store.records import Memory
from tests.conftest import Running, StartDaemon
from tests.settling import until_idle
from tests.test_api import call

NS = "readers"
PEOPLE = [
    a + b
    for a in ("Al", "Be", "Ca", "Da", "El", "Fa")
    for b in ("ric", "ton", "mira", "dane", "vik", "sha")
]
CITIES = ["Seattle", "Lisbon", "Oslo", "Leeds", "Kyoto", "Quito", "Accra"]
# Store calls a search may make (transactions opened, and calls on them) for any `limit`: recall's
# candidates, then one read that hydrates the hits.
MOST_CALLS = {"v5": 9, "v4": 10, "v3": 6}


class Counts:
    """What the measured request asked of the store: transactions opened, and calls on them."""

    def __init__(self) -> None:
        self.measured = ""  # the request id being counted
        self.opened: Counter[str] = Counter()  # read / scan / write
        self.calls: Counter[str] = Counter()  # reader and writer methods

    def counts(self) -> bool:
        return bool(self.measured) and request_id.get() == self.measured

    @property
    def total(self) -> int:
        return sum(self.opened.values()) + sum(self.calls.values())


class Spy:
    """A reader or writer whose every method call is counted."""

    def __init__(self, inner: Any, counts: Counts) -> None:
        self._inner = inner
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._counts.counts():
                self._counts.calls[name] += 1
            return found(*args, **kwargs)

        return counted


def spy_on(store: Any, monkeypatch: pytest.MonkeyPatch) -> Counts:
    counts = Counts()

    def wrap(kind: str, opened: Callable[..., Any]) -> Callable[..., Any]:
        @contextlib.asynccontextmanager
        async def counted(*args: Any) -> AsyncIterator[Spy]:
            if counts.counts():
                counts.opened[kind] += 1
            async with opened(*args) as inner:
                yield Spy(inner, counts)

        return counted

    for kind in ("read", "scan", "write"):
        monkeypatch.setattr(store, kind, wrap(kind, getattr(store, kind)))
    return counts


async def measured(
    running: Running, counts: Counts, path: str, body: dict[str, Any]
) -> tuple[Any, Counts]:
    """The reply's body, and what its request read."""
    counts.measured = uuid.uuid4().hex[:16]
    counts.opened.clear()
    counts.calls.clear()
    status, out, _ = await call(
        running.unix, "POST", f"http://smemd{path}", json=body,
        headers={REQUEST_ID_HEADER: counts.measured},
    )  # fmt: skip
    assert status == 200, out
    seen = Counts()
    seen.opened, seen.calls = counts.opened.copy(), counts.calls.copy()
    counts.measured = ""
    return out, seen


def told(person: str, n: int, batch: int) -> str:
    """What the `batch`th document about a person says: where they live, then a move (a new
    version of that memory), then more about the new home."""
    home, new_home = CITIES[n % len(CITIES)], CITIES[(n + 1) % len(CITIES)]
    return [
        f"{person} lives in {home}.",
        f"{person} moved to {new_home}.",
        f"{person} lives in {new_home} and keeps {n + 2} bees in the garden there.",
    ][batch]


async def memories(running: Running, engine: Engine, *, history: bool) -> list[Memory]:
    """The namespace's memories, oldest first: the latest versions, or with `history` all."""
    ids: list[str] = []
    for page in itertools.count(1):
        status, out, _ = await call(
            running.unix, "POST",
            f"http://smemd/ns/{NS}/list/memories?limit=100&order=asc&page={page}",
            json={"history": history},
        )  # fmt: skip
        assert status == 200, out
        ids += [m["id"] for m in out["memories"]]
        if page >= out["pagination"]["totalPages"]:
            break
    by_id = {m.id: m for m in await engine.hydration.memories_in(NS, ids)}
    return [by_id[i] for i in ids]


@pytest.fixture
async def seeded(start_daemon: StartDaemon) -> Running:
    running = await start_daemon(engine__dreaming=False)
    engine = running.daemon.state.engine
    assert engine is not None
    for batch in range(3):
        documents = [
            {"content": told(person, n, batch), "id": f"doc-{n}-{batch}", "metadata": {"n": n}}
            for n, person in enumerate(PEOPLE)
        ]
        status, out, _ = await call(
            running.unix, "POST", f"http://smemd/ns/{NS}/document/batch",
            json={"documents": documents},
        )  # fmt: skip
        assert status == 200, out
        await until_idle(engine)
    # Links between people, as dreaming or a model would make them: each to the next, and a
    # pair linked both ways and twice over, whose kind shown is the one a read of it alone shows.
    latest = await memories(running, engine, history=False)
    async with engine.store.write() as writer:
        for a, b in itertools.pairwise(latest):
            await writer.add_relation(a.id, b.id, "extends", 0.9, time.time())
        first, second = latest[0], latest[1]
        await writer.add_relation(first.id, second.id, "contradicts", 0.8, time.time())
        await writer.add_relation(second.id, first.id, "derives", 0.7, time.time())
    return running


SEARCHES = [
    (
        "v5",
        f"/ns/{NS}/search",
        {
            "query": "who lives where and keeps bees?", "threshold": 0, "searchMode": "hybrid",
            "include": {"related": True, "documents": True},
        },
    ),
    (
        "v4",
        "/v4/search",
        {
            "q": "who lives where and keeps bees?", "containerTag": NS, "threshold": 0,
            "searchMode": "hybrid",
            "include": {"chunks": True, "relatedMemories": True, "documents": True},
        },
    ),
    (
        "v3",
        "/v3/search",
        {"q": "who lives where and keeps bees?", "containerTag": NS, "chunkThreshold": 0},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("face", "path", "body"), SEARCHES, ids=[s[0] for s in SEARCHES])
async def test_a_search_reads_the_store_as_often_for_one_hit_as_for_thirty(
    seeded: Running, monkeypatch: pytest.MonkeyPatch, face: str, path: str, body: dict[str, Any]
) -> None:
    engine = seeded.daemon.state.engine
    assert engine is not None
    counts = spy_on(engine.store, monkeypatch)
    await measured(seeded, counts, path, {**body, "limit": 30})  # the indexes load
    one, one_read = await measured(seeded, counts, path, {**body, "limit": 1})
    many, many_read = await measured(seeded, counts, path, {**body, "limit": 30})
    assert len(one["results"]) == 1
    assert len(many["results"]) == 30
    assert one_read.total > 0  # the spy sees the request's reads
    # Thirty hits show their documents, chunks and related memories...
    if face == "v5":
        assert all(r["included"]["document"] for r in many["results"])
        assert any(r["included"]["related"]["siblings"] for r in many["results"] if "memory" in r)
    elif face == "v4":
        assert all(r["chunks"] and r["documents"] for r in many["results"] if "memory" in r)
        assert any(r["context"]["related"] for r in many["results"] if "memory" in r)
    else:
        assert all(r["chunks"] for r in many["results"])
    # ...read at the same few calls as one hit is.
    assert one_read.opened == many_read.opened, (one_read.opened, many_read.opened)
    assert many_read.opened["read"] <= 2, many_read.opened
    assert many_read.total <= MOST_CALLS[face], many_read.calls
    assert one_read.total <= MOST_CALLS[face], one_read.calls


async def related_one_by_one(store: Store, memory: Memory, limit: int) -> Related:
    """What a memory's related were, read on their own (as routes did before hydration)."""
    async with store.read() as reader:
        chain = await reader.chain(memory.root_id)
        links = [r for r in await reader.relations_of([memory.id]) if r.kind in SIBLING_KINDS]
        others = {r.to_id if r.from_id == memory.id else r.from_id: r.kind for r in links}
        siblings = await reader.memories_by_id(list(others))
    earlier = [m for m in chain if memory.version - RELATED_STEPS <= m.version < memory.version]
    later = [m for m in chain if memory.version < m.version <= memory.version + RELATED_STEPS]
    return Related(
        parents=sorted(earlier, key=lambda m: -m.version)[:limit],
        children=sorted(later, key=lambda m: m.version)[:limit],
        siblings=[(m, others[m.id]) for m in siblings][:limit],
        pointed_to={r.to_id for r in links if r.from_id == memory.id},
    )


async def test_related_memories_read_in_one_go_are_those_read_one_by_one(seeded: Running) -> None:
    engine = seeded.daemon.state.engine
    assert engine is not None
    every = await memories(seeded, engine, history=True)
    hits = [Hit(score=1.0, similarity=1.0, memory=m) for m in every]
    for limit in (1, 5):
        hydrated = await engine.hydration.hits(hits, related=limit)
        for h in hydrated:
            assert h.hit.memory is not None
            assert h.related == await related_one_by_one(engine.store, h.hit.memory, limit)
    assert any(h.related and h.related.siblings for h in hydrated)
    assert any(h.related and h.related.parents for h in hydrated)


async def test_memory_counts_cost_as_much_for_one_document_as_for_thirty(
    seeded: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = seeded.daemon.state.engine
    assert engine is not None
    counts = spy_on(engine.store, monkeypatch)
    reads = []
    for limit in (1, 30):
        listed, read = await measured(
            seeded, counts, f"/ns/{NS}/list/documents?limit={limit}",
            {"include": {"memoryCount": True}},
        )  # fmt: skip
        refs = [d["customId"] for d in listed["documents"]]
        named, named_read = await measured(
            seeded, counts, f"/ns/{NS}/list/documents/memory-counts", {"ids": [*refs, "none"]}
        )  # fmt: skip
        assert len(refs) == limit
        # Each count is what the document's memories, read on their own, number.
        async with engine.store.read() as reader:
            for doc in listed["documents"]:
                assert doc["system"]["memoryCount"] == len(
                    await reader.memories_of_document(doc["id"])
                )
        assert [(c["id"], c["memoryCount"]) for c in named["counts"]] == [
            (d["customId"], d["system"]["memoryCount"]) for d in listed["documents"]
        ]
        assert any(d["system"]["memoryCount"] for d in listed["documents"])
        reads.append((read.total, named_read.total))
    assert reads[0] == reads[1], reads
