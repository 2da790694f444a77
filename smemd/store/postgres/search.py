"""Recall's candidates found by the database itself: no daemon holds a namespace's vectors or
words in its memory, and a row another daemon committed is found by the next search.

Vectors: the nearest by cosine through an HNSW index over `embedding` (halfvec) for the
embedder's dimension, made at start without blocking writes (`prepare`). The namespace is a
filter on that index: `hnsw.iterative_scan` (set per connection, db.py) goes on scanning the
graph until enough rows of the namespace, live, have been found; for a small namespace the
planner reads its rows by the namespace's own index and computes every distance instead.

Words: BM25 over the full-text lexemes of `words`, read from their posting lists (tables the
triggers of schema.py keep), scored as the in-memory index scores (smemd.engine.index.bm25:
k1 1.2, b 0.75, idf floored at 1e-6, the namespace's own statistics, every row with a vector
counted whether live or not). A row's length is its words less the stopwords, which the
in-memory index counts. The statistics (rows and their mean
length) of a large namespace are read at most once a `STATISTICS_S`, as they drift slowly; a
small one's at every query; document frequencies are always the query's own.

With `among` (a filter, time travel or the forgotten), the rows allowed are named and every
distance among them computed: exact, as the in-memory indexes are for such queries.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import psycopg

from smemd.store.records import IndexKind
from smemd.store.sql.memories import LIVE
from smemd.store.sql.retractions import CHUNK_RETRACTED

EF_SEARCH = 100  # graph candidates per search: depth (40) with room for the live filter
STATISTICS_S = 60.0
CACHED_FROM = 10_000  # rows of a kind from which its statistics are kept for STATISTICS_S
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64  # pgvector's defaults, measured in the README
K1, B = 1.2, 0.75

_TABLE = {"memories": "memories m", "chunks": "chunks c"}
_ALIAS = {"memories": "m", "chunks": "c"}
_LIVE = {"memories": LIVE, "chunks": f"NOT {CHUNK_RETRACTED}"}

# BM25 over the posting lists (schema.py) of the query's lexemes: read by the key alone, scored,
# and only the best `room` looked up for whether they are live (with `among`, the best of those
# rows). `df` counts the rows of the namespace holding each lexeme, live or not, as the
# statistics do. Arithmetic is float8: numeric's would be exact to no purpose, and slower.
_WORDS = """
WITH lexemes AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english'::regconfig, %(text)s))),
hits AS (
    SELECT p.seq, p.lexeme, p.tf::float8 AS tf, p.length::float8 AS length
    FROM {kind}_postings p
    WHERE p.namespace = %(namespace)s AND p.lexeme IN (SELECT lexeme FROM lexemes)
),
df AS (SELECT lexeme, count(*)::float8 AS n FROM hits GROUP BY lexeme),
best AS (
    SELECT h.seq, sum(
        greatest(ln((greatest(%(rows)s::float8, df.n) - df.n + 0.5) / (df.n + 0.5)), 1e-6) * h.tf
        * {k1_plus_1} / (h.tf + {k1} * (1 - {b} + {b} * h.length / %(mean)s::float8))) AS score
    FROM hits h JOIN df USING (lexeme){among}
    GROUP BY h.seq ORDER BY score DESC, h.seq LIMIT %(room)s
)
SELECT best.seq, best.score, {live} FROM best
JOIN {table} ON {a}.namespace = %(namespace)s AND {a}.seq = best.seq
ORDER BY best.score DESC, best.seq
"""
ROOM = 4  # rows scored per row wanted, before the live ones among them are counted


class SearchReads:
    """The reads of smemd.store.protocol's StoreSearching, over a PostgreSQL reader's connection."""

    db: Any  # PostgresConnection
    statistics: dict[tuple[str, IndexKind], tuple[float, float, float]]  # the store's, shared

    async def nearest(
        self, namespace: str, kind: IndexKind, vector: np.ndarray, depth: int,
        among: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """Up to `depth` (seq, cosine) nearest `vector`, best first: live rows, or those of `among`."""
        a, dimension = _ALIAS[kind], len(vector)
        distance = f"{a}.embedding::halfvec({dimension}) <=> %(vector)s::halfvec({dimension})"
        where = f"{a}.namespace = %(namespace)s AND {a}.embedding IS NOT NULL"
        where += f" AND {_LIVE[kind]}" if among is None else f" AND {a}.seq = ANY(%(among)s)"
        sql = (
            f"SELECT {a}.seq, 1 - ({distance}) FROM {_TABLE[kind]} WHERE {where}"
            f" ORDER BY {distance} LIMIT %(depth)s"
        )
        params = {"namespace": namespace, "vector": literal(vector), "depth": depth,
                  "among": _seqs(among)}  # fmt: skip
        rows = await self._raw(sql, params)
        hits = [(int(seq), float(cosine)) for seq, cosine in rows]
        hits.sort(key=lambda hit: -hit[1])  # an iterative scan's order is only nearly sorted
        return hits

    async def cosines(
        self, kind: IndexKind, vector: np.ndarray, seqs: Sequence[int]
    ) -> list[float]:
        """The cosine of each of `seqs` with `vector`, in their order (0 for a row without one)."""
        if not seqs:
            return []
        a = _ALIAS[kind]
        rows = await self._raw(
            f"SELECT {a}.seq, 1 - ({a}.embedding <=> %(vector)s::halfvec) FROM {_TABLE[kind]}"
            f" WHERE {a}.seq = ANY(%(seqs)s) AND {a}.embedding IS NOT NULL",
            {"vector": literal(vector), "seqs": _seqs(seqs)},
        )
        found = {int(seq): float(cosine) for seq, cosine in rows}
        return [found.get(seq, 0.0) for seq in seqs]

    async def matching(
        self, namespace: str, kind: IndexKind, text: str, depth: int,
        among: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:  # fmt: skip
        """Up to `depth` (seq, BM25 score) for the words of `text`, best first."""
        if depth <= 0 or not text.strip():
            return []
        rows, mean = await self._statistics(namespace, kind)
        if rows == 0:
            return []
        a = _ALIAS[kind]
        sql = _WORDS.format(
            a=a, kind=kind, table=_TABLE[kind], k1=K1, b=B, k1_plus_1=K1 + 1,
            live=_LIVE[kind] if among is None else "true",
            among="" if among is None else " WHERE h.seq = ANY(%(among)s)",
        )  # fmt: skip
        params = {"text": text, "namespace": namespace, "rows": rows, "mean": max(mean, 1e-9),
                  "among": _seqs(among)}  # fmt: skip
        room = ROOM * depth
        while True:  # mostly once: unless most of the best are superseded or forgotten
            found = await self._raw(sql, {**params, "room": room})
            live = [(int(seq), float(score)) for seq, score, alive in found if alive]
            if len(live) >= depth or len(found) < room:
                return live[:depth]
            room *= 4

    async def _statistics(self, namespace: str, kind: IndexKind) -> tuple[float, float]:
        key = (namespace, kind)
        cached = self.statistics.get(key)
        if cached is not None and time.monotonic() - cached[0] < STATISTICS_S:
            return cached[1], cached[2]
        a = _ALIAS[kind]
        row = (await self._raw(
            f"SELECT count(*), coalesce(avg({a}.word_count), 0) FROM {_TABLE[kind]}"
            f" WHERE {a}.namespace = %(namespace)s AND {a}.vector IS NOT NULL",
            {"namespace": namespace},
        ))[0]  # fmt: skip
        rows, mean = float(row[0]), float(row[1])
        if (
            rows >= CACHED_FROM
        ):  # a smaller namespace is counted afresh: cheap, and it may grow fast
            self.statistics[key] = (time.monotonic(), rows, mean)
        return rows, mean

    async def _raw(self, sql: str, params: dict[str, Any]) -> list[Any]:
        """Statements written for psycopg itself, past the shared SQL's translation."""
        async with self.db.raw.cursor() as cursor:
            await cursor.execute(sql.encode(), params)
            return await cursor.fetchall()


def literal(vector: np.ndarray) -> str:
    """A vector as pgvector reads it: `[x,y,…]`."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _seqs(seqs: Collection[int] | None) -> list[int]:
    return [] if seqs is None else [int(s) for s in seqs]


async def prepare(db: psycopg.AsyncConnection[Any], dimension: int) -> None:
    """The HNSW index of each kind for `dimension`, built beside writes (CONCURRENTLY) if it is
    missing; one left invalid by a build that was cut short is built again. Until it is valid,
    searches compute every distance of the namespace: right, only slower. Then the tables are
    analysed (after a bulk load, stale statistics would have the planner pass the HNSW index
    by) and the posting lists vacuumed, so that their scans read the index alone (a page not
    yet marked all-visible sends each of its rows to the table); quick where autovacuum has
    been before."""
    await _vector_indexes(db, dimension)
    await db.execute(b"ANALYZE memories, chunks")
    await db.execute(b"VACUUM (ANALYZE) memories_postings, chunks_postings")


async def _vector_indexes(db: psycopg.AsyncConnection[Any], dimension: int) -> None:
    for table in ("memories", "chunks"):
        name = f"{table}_embedding_{dimension}"
        cursor = await db.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
            [name],
        )
        found = await cursor.fetchone()
        if found is not None and found[0]:
            continue
        if found is not None:
            await db.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}".encode())
        await db.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} USING hnsw"
            f" ((embedding::halfvec({dimension})) halfvec_cosine_ops)"
            f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})".encode()
        )
