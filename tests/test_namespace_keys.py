"""Every row of a namespace names it, links too (sources, relations, entity mentions, a job's
candidates), so that a store can be keyed, and distributed, by namespace: on both backends the
links carry their memory's namespace, follow it in a move and go with it in a removal."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smemd.store.protocol import Store
from smemd.store.records import Candidate, Mention, NewMemory
from tests.postgres import store_at
from tests.raw_sqlite import connection

LINKS = ("memory_sources", "relations", "memory_entities", "candidates")


async def fill(store: Store, namespace: str) -> None:
    async with store.write() as writer:
        await writer.ensure_namespace(namespace, 1.0)
        for i in (1, 2):
            new = NewMemory(
                id=f"mem_{namespace}{i}", namespace=namespace, text=f"Alex fact {i}", type="fact",
                root_id=f"mem_{namespace}{i}", document_id=f"doc_{namespace}", chunk_id="chk",
                mentions=[Mention(name="Alex", kind="person")],
            )  # fmt: skip
            await writer.insert_memory(new, np.ones(4, dtype=np.float32), 1.0)
        await writer.add_source(f"mem_{namespace}1", f"doc_{namespace}b", None, 2.0)
        await writer.add_relation(f"mem_{namespace}2", f"mem_{namespace}1", "extends", 0.9, 2.0)
        await writer.insert_job(f"job_{namespace}", namespace, f"doc_{namespace}", 1, 2.0)
        candidate = Candidate(
            job_id=f"job_{namespace}", position=0, chunk_id="chk", text="t", type="fact"
        )
        await writer.insert_candidates([(candidate, np.ones(4, dtype=np.float32))])


async def by_namespace(store: Store) -> dict[str, dict[str, int]]:
    async with store.read() as reader:
        found: dict[str, dict[str, int]] = {}
        for table in LINKS:
            rows = await connection(reader).execute_fetchall(
                f"SELECT namespace, count(*) FROM {table} GROUP BY namespace"
            )
            found[table] = {str(ns): int(n) for ns, n in rows}
        return found


async def test_links_carry_their_namespace_follow_a_move_and_go_with_a_removal(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path / "s.sqlite3")
    await store.open()
    try:
        await fill(store, "a")
        await fill(store, "b")
        each = {"memory_sources": 3, "relations": 1, "memory_entities": 2, "candidates": 1}
        assert await by_namespace(store) == {t: {"a": n, "b": n} for t, n in each.items()}
        async with store.write() as writer:  # the relation counts, with the two sources
            await writer.add_relation("mem_a2", "mem_a1", "extends", 0.5, 3.0)  # an upsert
            await writer.move_namespace("a", "c")
        moved = await by_namespace(store)
        assert moved == {t: {"b": n, "c": n} for t, n in each.items()}
        async with store.read() as reader:  # two sources and the link, counted once
            rows = await connection(reader).execute_fetchall(
                "SELECT connections FROM memories WHERE id = 'mem_a1'"
            )
            assert list(rows) == [(3,)], rows
        async with store.write() as writer:
            await writer.remove_namespace("c")
        assert await by_namespace(store) == {t: {"b": n} for t, n in each.items()}
    finally:
        await store.close()
