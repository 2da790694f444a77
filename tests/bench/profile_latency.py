"""The profile and dreaming's backlog count on a large store.

A store of `n` memories (a third each fact, preference, episode; every memory from one of n/20
documents, every 7th extending the next) built straight through the store. Then the profile is
built 30 times, and, for comparison, its static query ordered by counting each memory's sources
and links per row (what the kept `connections` column replaces). One line:

  profile n=… p50_ms=… p95_ms=… counted_p50_ms=… speedup=…x backlog_ms=…

`backlog_ms` is dreaming's backlog count as `/v1/status` runs it on a store a model has read
(typed at extraction, every memory looked at for links): nothing left to do.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from smemd.engine.index.per_namespace import Indexes
from smemd.engine.recall.hybrid import Recall
from smemd.engine.recall.profile import Profiles
from smemd.fleet.builtin import HashedEmbedder
from smemd.store.records import MemoryType, NewMemory
from smemd.store.sql.conditions import LIVE_NOW
from smemd.store.sql.rows import MEMORY_COLUMNS
from smemd.store.sqlite.store import SqliteStore as Store
from tests.raw_sqlite import connection

KINDS: tuple[MemoryType, ...] = ("fact", "preference", "episode")
RUNS = 30
COUNTED = (
    "(SELECT count(*) FROM memory_sources s WHERE s.memory_id = m.id)"
    " + (SELECT count(*) FROM relations r WHERE r.from_id = m.id OR r.to_id = m.id)"
)


async def build(store: Store, n: int) -> None:
    vector = np.ones(384, dtype=np.float32)
    now = time.time()
    async with store.write() as writer:
        await writer.ensure_namespace("n", now)
        items = [
            (
                NewMemory(
                    id=f"mem_{i}", namespace="n", text=f"memory number {i}", type=KINDS[i % 3],
                    root_id=f"mem_{i}", document_id=f"doc_{i % max(1, n // 20)}",
                    typed_by="extraction",
                ),
                vector,
            )
            for i in range(n)
        ]  # fmt: skip
        await writer.insert_memories(items, now)
        await writer.mark_linked([f"mem_{i}" for i in range(n)], now)
        for i in range(0, n - 1, 7):
            await writer.add_relation(f"mem_{i}", f"mem_{i + 1}", "extends", 0.9, now)


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.sqlite3")
        await store.open()
        await build(store, n)
        embedder = HashedEmbedder()
        profiles = Profiles(store, Recall(store, embedder, Indexes(store, embedder.dimension)))
        built, counted, backlog = [], [], []
        for _ in range(RUNS):
            t = time.perf_counter()
            await profiles.build("n")
            built.append(time.perf_counter() - t)
            t = time.perf_counter()
            async with store.read() as reader:
                await connection(reader).execute_fetchall(
                    f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.namespace = ? AND {LIVE_NOW}"
                    " AND m.type IN ('preference', 'fact') ORDER BY m.type = 'preference' DESC,"
                    f" m.is_static DESC, {COUNTED} DESC LIMIT 30",
                    ["n", time.time()],
                )
            counted.append(time.perf_counter() - t)
            t = time.perf_counter()
            async with store.read() as reader:
                await reader.dream_backlog()
            backlog.append(time.perf_counter() - t)
        await store.close()
    p50, p95 = ms(built)
    counted_p50, _ = ms(counted)
    backlog_p50, _ = ms(backlog)
    print(
        f"profile n={n} p50_ms={p50:.2f} p95_ms={p95:.2f} counted_p50_ms={counted_p50:.1f}"
        f" speedup={counted_p50 / p50:.0f}x backlog_ms={backlog_p50:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the store")
    asyncio.run(main(parser.parse_args().n))
