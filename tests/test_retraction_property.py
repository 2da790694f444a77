"""Retraction over random source graphs, through the real daemon: retract a document or a memory
then unretract is the identity, and after a retraction a memory is live exactly when a live
source still holds it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine
from typing import Any, TypeVar

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from smemd.engine.core import Engine
from smemd.store.records import Document, NewMemory
from tests.conftest import Running
from tests.raw_sqlite import read_rows
from tests.test_api import call
from tests.test_retraction import engine_of, snapshot

T = TypeVar("T")
_namespaces = itertools.count()


class Graph:
    """Documents 0..docs-1; read memories each with source documents and maybe a version chain;
    inferences each derived from earlier memories (so no cycle)."""

    def __init__(
        self, docs: int, read: list[tuple[frozenset[int], int | None]], inferred: list[list[int]]
    ) -> None:
        self.docs, self.read, self.inferred = docs, read, inferred


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, str, int]:
    docs = draw(st.integers(1, 4))
    sources = st.frozensets(st.integers(0, docs - 1), min_size=1, max_size=docs)
    read = draw(st.lists(st.tuples(sources, st.none() | st.integers(0, 1)), min_size=1, max_size=6))
    inferred: list[list[int]] = []
    for _ in range(draw(st.integers(0, 3))):
        earlier = len(read) + len(inferred)
        parents = st.lists(st.integers(0, earlier - 1), min_size=1, max_size=3, unique=True)
        inferred.append(draw(parents))
    memories = len(read) + len(inferred)
    subject = draw(st.sampled_from(["document", "memory"]))
    return (
        Graph(docs, read, inferred),
        subject,
        draw(st.integers(0, (docs if subject == "document" else memories) - 1)),
    )


async def build(engine: Engine, graph: Graph) -> tuple[str, list[str], list[str], list[list[str]]]:
    """The graph in a fresh namespace: (namespace, document ids, memory ids, chains by order)."""
    namespace = f"prop{next(_namespaces)}"
    vector = np.ones(engine.embedder.dimension, dtype=np.float32)
    t = 1_000_000.0
    docs = [f"doc_{namespace}_{i}" for i in range(graph.docs)]
    memories: list[str] = []
    chains: dict[int, list[str]] = {}
    async with engine.store.write() as writer:
        await writer.ensure_namespace(namespace, t)
        for doc in docs:
            await writer.insert_document(
                Document(
                    seq=0, id=doc, namespace=namespace, caller_id=None, title=doc, type="text",
                    content=doc, url=None, metadata={}, content_date=None, content_hash=doc,
                    task_type="memory", status="done", error=None, revision=1, created_at=t,
                    updated_at=t,
                )
            )  # fmt: skip
        for i, (sources, chain) in enumerate(graph.read):
            memory_id = f"mem_{namespace}_{i}"
            first, *others = sorted(sources)
            root = chains[chain][0] if chain is not None and chain in chains else memory_id
            await writer.insert_memory(
                NewMemory(id=memory_id, namespace=namespace, text=memory_id, type="fact",
                          root_id=root, document_id=docs[first], valid_from=t + i),
                vector, t + i,
            )  # fmt: skip
            for other in others:
                await writer.add_source(memory_id, docs[other], None, t + i)
            if chain is not None:
                chains.setdefault(chain, []).append(memory_id)
                await writer.rechain(root, t + i)
            memories.append(memory_id)
        for j, parents in enumerate(graph.inferred):
            memory_id = f"mem_{namespace}_inferred_{j}"
            await writer.insert_memory(
                NewMemory(id=memory_id, namespace=namespace, text=memory_id, type="fact",
                          root_id=memory_id, is_inference=True, valid_from=t),
                vector, t,
            )  # fmt: skip
            for parent in parents:
                await writer.add_relation(memory_id, memories[parent], "derives", 0.9, t)
            memories.append(memory_id)
    return namespace, docs, memories, list(chains.values())


def expected_live(graph: Graph, subject: str, retracted: int) -> list[bool]:
    """A read memory lives while a document other than a retracted one says it; an inference
    while one of its parents lives; a retracted memory does not."""
    document = retracted if subject == "document" else -1
    live = [bool(sources - {document}) for sources, _ in graph.read]
    for parents in graph.inferred:
        live.append(any(live[p] for p in parents))
    if subject == "memory":
        live[retracted] = False
        for j, parents in enumerate(graph.inferred, start=len(graph.read)):
            live[j] = live[j] and (j == retracted or any(live[p] for p in parents))
    return live


async def rows(engine: Engine, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    marks = ",".join("?" * len(ids))
    found = await read_rows(
        engine.store,
        f"SELECT id, retraction_id, forgotten_at, is_latest FROM memories WHERE id IN ({marks})",
        ids,
    )
    return {r[0]: tuple(r[1:]) for r in found}


async def test_retract_then_unretract_is_the_identity_and_only_sourceless_memories_go(
    running: Running,
) -> None:
    engine = engine_of(running)
    loop = asyncio.get_running_loop()

    def wait(coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=30)

    @settings(max_examples=100, deadline=None, database=None)
    @given(graphs())
    def check(case: tuple[Graph, str, int]) -> None:
        graph, subject, retracted = case
        namespace, docs, memories, chains = wait(build(engine, graph))
        before = wait(snapshot(engine, namespace))
        url = f"http://smemd/ns/{namespace}/" + (
            f"document/{docs[retracted]}"
            if subject == "document"
            else f"memories/{memories[retracted]}"
        )
        status, body, _ = wait(call(running.unix, "POST", f"{url}/retract"))
        assert status == 200, body

        state = wait(rows(engine, memories))
        live = expected_live(graph, subject, retracted)
        withdrawn = [m for m, alive in zip(memories, live, strict=True) if not alive]
        assert [m for m in memories if state[m][0] is not None] == withdrawn
        assert sorted(body["withdrawn"]) == sorted(withdrawn)
        assert not any(state[m][2] for m in withdrawn)  # out of their chains
        for chain in chains:  # the last version still standing is the latest, and only it
            standing = [m for m in chain if state[m][0] is None]
            assert [m for m in standing if state[m][2]] == standing[-1:]

        status, body, _ = wait(call(running.unix, "POST", f"{url}/unretract"))
        assert status == 200, body
        assert wait(snapshot(engine, namespace)) == before

    await asyncio.to_thread(check)
