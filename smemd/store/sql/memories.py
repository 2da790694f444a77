"""SQL for memories, their sources and relations, and BM25 over memory and chunk text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from smemd.store.queries import ProfilePick, Visibility
from smemd.store.records import (
    IndexKind,
    IndexRows,
    Memory,
    MemoryCensus,
    NewMemory,
    Relation,
    RelationKind,
)
from smemd.store.sql import chains
from smemd.store.sql.chains import Version
from smemd.store.sql.conditions import (
    FORGOTTEN_NOW,
    STATUS_WHERE,
    chunk_visible,
    memory_visible,
    profile_picked,
)
from smemd.store.sql.connection import Connection
from smemd.store.sql.entities import EntityWrites
from smemd.store.sql.retractions import CHUNK_RETRACTED, SOURCE_FROM_MEMORY
from smemd.store.sql.rows import (
    CHUNK_WORDS,
    MEMORY_COLUMNS,
    batches,
    list_json,
    metadata_json,
    to_record,
    to_records,
)
from smemd.store.vectors import to_blob

# What normal recall sees: the latest version, not forgotten. Expiry is checked at query time.
LIVE = "m.is_latest = 1 AND m.forgotten_at IS NULL"
_STATUS_CASE = f"CASE WHEN {FORGOTTEN_NOW} THEN 'forgotten' WHEN m.is_latest = 1 THEN 'live' ELSE 'superseded' END"


class MemoryReads:
    db: Connection

    async def memory(self, namespace: str, memory_id: str) -> Memory | None:
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ? AND id = ?",
            [namespace, memory_id],
        )
        return to_record(Memory, next(iter(rows))) if rows else None

    async def memories_by_seq(self, seqs: Sequence[int]) -> dict[int, Memory]:
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE seq IN ({marks})", list(seqs)
        )
        return {m.seq: m for m in to_records(Memory, list(rows))}

    async def memories_by_id(self, ids: Sequence[str]) -> list[Memory]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", list(ids)
        )
        return to_records(Memory, list(rows))

    async def chain(self, root_id: str) -> list[Memory]:
        """Every version of one memory, oldest first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id = ? ORDER BY version", [root_id]
        )
        return to_records(Memory, list(rows))

    async def chains(self, root_ids: Sequence[str]) -> dict[str, list[Memory]]:
        """Every version of each of several memories, oldest first, by root id."""
        if not root_ids:
            return {}
        marks = ",".join("?" * len(root_ids))
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id IN ({marks})"
            " ORDER BY root_id, version",
            list(root_ids),
        )
        by_root: dict[str, list[Memory]] = {root_id: [] for root_id in root_ids}
        for memory in to_records(Memory, list(rows)):
            by_root[memory.root_id].append(memory)
        return by_root

    async def memory_by_text(self, namespace: str, text: str) -> Memory | None:
        """The newest latest version whose text is exactly `text`, preferring one not forgotten."""
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.namespace = ? AND m.is_latest = 1"
            " AND m.text = ? ORDER BY (m.forgotten_at IS NOT NULL) ASC, m.created_at DESC,"
            " m.seq DESC LIMIT 1",
            [namespace, text],
        )
        return to_record(Memory, next(iter(rows))) if rows else None

    async def profile_memories(self, namespace: str, pick: ProfilePick) -> list[Memory]:
        """The first `pick.limit` in its order, without counting the rest (a page's total can
        cost more than the page)."""
        where, params, order = profile_picked(self.db.dialect, namespace, pick)
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.namespace = ? AND ({where})"
            f" ORDER BY {order} LIMIT ?",
            [namespace, *params, pick.limit],
        )
        return to_records(Memory, list(rows))

    async def census(
        self, namespace: str, *, now: float, since: float, facts_cap: int
    ) -> MemoryCensus:
        """Counts for an overview: one pass over the namespace's memories, one walk of the
        (namespace, is_latest, created_at) index since `since`, one source lookup per document."""
        by_status: dict[str, int] = {"live": 0, "superseded": 0, "forgotten": 0}
        live_by_type: dict[str, int] = {}
        rows = await self.db.execute_fetchall(
            f"SELECT {_STATUS_CASE}, m.type, count(*) FROM memories m WHERE m.namespace = ?"
            " GROUP BY 1, 2",
            [now, namespace],
        )
        for status, type_, count in rows:
            by_status[status] += count
            if status == "live":
                live_by_type[type_] = count
        # `is_latest IN (0, 1)` lets the index's third column bound the time range.
        hours = await self.db.execute_fetchall(
            f"SELECT {self.db.dialect.whole('(m.created_at - ?) / 3600')}, count(*) FROM memories m"
            " WHERE m.namespace = ? AND m.is_latest IN (0, 1) AND m.created_at >= ? GROUP BY 1",
            [since, namespace, since],
        )
        documents = await self.db.execute_fetchall(
            f"SELECT {self.db.dialect.least('n', '?')}, count(*) FROM (SELECT (SELECT count(DISTINCT s.memory_id)"
            " FROM memory_sources s JOIN memories m ON m.id = s.memory_id"
            f" WHERE s.document_id = d.id AND {STATUS_WHERE['live']}) AS n"
            " FROM documents d WHERE d.namespace = ?) GROUP BY 1",
            [facts_cap, now, namespace],
        )
        return MemoryCensus(
            by_status=by_status,
            live_by_type=live_by_type,
            per_hour={int(h): int(c) for h, c in hours},
            per_document={int(n): int(c) for n, c in documents},
        )

    async def memories_of_document(self, document_id: str) -> list[Memory]:
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE document_id = ? OR id IN"
            " (SELECT memory_id FROM memory_sources WHERE document_id = ?) ORDER BY seq",
            [document_id, document_id],
        )
        return to_records(Memory, list(rows))

    async def memory_seqs(self, namespace: str, visibility: Visibility) -> list[int]:
        """The memories a query may see, when it restricts them (recall scans only these)."""
        where, params = memory_visible(self.db.dialect, namespace, visibility)
        rows = await self.db.execute_fetchall(
            f"SELECT m.seq FROM memories m WHERE m.namespace = ? AND ({where})",
            [namespace, *params],
        )
        return [r[0] for r in rows]

    async def chunk_seqs(self, namespace: str, visibility: Visibility) -> list[int]:
        where, params = chunk_visible(self.db.dialect, namespace, visibility)
        rows = await self.db.execute_fetchall(
            f"SELECT c.seq FROM chunks c JOIN documents d ON d.id = c.document_id"
            f" WHERE c.namespace = ? AND ({where})",
            [namespace, *params],
        )
        return [r[0] for r in rows]

    async def memory_index_rows(self, namespace: str, after: int, limit: int) -> IndexRows:
        """A page of memories with vectors (seq > `after`), with whether normal recall sees each."""
        rows = await self.db.execute_fetchall(
            f"SELECT m.seq, m.vector, m.text, {LIVE} FROM memories m WHERE m.namespace = ?"
            " AND m.seq > ? AND m.vector IS NOT NULL ORDER BY m.seq LIMIT ?",
            [namespace, after, limit],
        )
        return IndexRows.of(list(rows))

    async def index_states(self, namespace: str, kind: IndexKind) -> tuple[list[int], list[bool]]:
        """Every row with a vector, as (seqs ascending, whether recall sees each): what a saved
        index is checked against, without reading a vector or a text."""
        # The partial indexes of migration 0012 hold every column asked: no row is read.
        if kind == "memories":
            sql = f"SELECT m.seq, {LIVE} FROM memories m"
            sql += self.db.dialect.indexed_by("memories_index_state")
            sql += " WHERE m.namespace = ? AND m.vector IS NOT NULL ORDER BY m.seq"
        else:
            sql = f"SELECT c.seq, NOT {CHUNK_RETRACTED} FROM chunks c"
            sql += self.db.dialect.indexed_by("chunks_index_state")
            sql += " WHERE c.namespace = ? AND c.vector IS NOT NULL ORDER BY c.seq"
        seqs: list[int] = []
        live: list[bool] = []
        async for rows in self.db.stream(sql, [namespace], 65536):
            seqs += [r[0] for r in rows]
            live += [bool(r[1]) for r in rows]
        return seqs, live

    async def index_rows_by_seq(self, kind: IndexKind, seqs: Sequence[int]) -> IndexRows:
        """The rows with these seqs, as a load reads them (for a saved index to catch up)."""
        found: list[Any] = []
        for start in range(0, len(seqs), 500):
            batch = list(seqs[start : start + 500])
            marks = ",".join("?" * len(batch))
            if kind == "memories":
                sql = f"SELECT m.seq, m.vector, m.text, {LIVE} FROM memories m"
                sql += f" WHERE m.seq IN ({marks}) AND m.vector IS NOT NULL ORDER BY m.seq"
            else:
                sql = f"SELECT c.seq, c.vector, {CHUNK_WORDS}, NOT {CHUNK_RETRACTED} FROM chunks c"
                sql += f" WHERE c.seq IN ({marks}) AND c.vector IS NOT NULL ORDER BY c.seq"
            found += await self.db.execute_fetchall(sql, batch)
        return IndexRows.of(found)

    async def count_vectors(self, namespace: str) -> tuple[int, int]:
        """How many memories and chunks of the namespace have vectors."""
        rows = await self.db.execute_fetchall(
            "SELECT (SELECT count(*) FROM memories WHERE namespace = ? AND vector IS NOT NULL),"
            " (SELECT count(*) FROM chunks WHERE namespace = ? AND vector IS NOT NULL)",
            [namespace, namespace],
        )
        memories, chunks = next(iter(rows))
        return int(memories), int(chunks)

    async def relations_of(self, ids: Sequence[str]) -> list[Relation]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        # Those from one of them first, each part by its ends, then kind: one order whatever the
        # backend's plan.
        rows = await self.db.execute_fetchall(
            "SELECT from_id, to_id, kind, score, created_at FROM relations"
            f" WHERE from_id IN ({marks}) OR to_id IN ({marks})"
            f" ORDER BY CASE WHEN from_id IN ({marks}) THEN 0 ELSE 1 END, from_id, to_id, kind",
            [*ids, *ids, *ids],
        )
        return to_records(Relation, list(rows))

    async def relations_by_memory(self, ids: Sequence[str]) -> dict[str, list[Relation]]:
        """Each memory's relations, in the order `relations_of` gives them for it alone: those
        from it, then those to it, each by the other end, then kind."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        outgoing = await self.db.execute_fetchall(
            "SELECT from_id, to_id, kind, score, created_at FROM relations"
            f" WHERE from_id IN ({marks}) ORDER BY from_id, to_id, kind",
            list(ids),
        )
        incoming = await self.db.execute_fetchall(
            "SELECT from_id, to_id, kind, score, created_at FROM relations"
            f" WHERE to_id IN ({marks}) AND from_id != to_id ORDER BY to_id, from_id, kind",
            list(ids),
        )
        by_memory: dict[str, list[Relation]] = {memory_id: [] for memory_id in ids}
        for relation in to_records(Relation, list(outgoing)):
            by_memory[relation.from_id].append(relation)
        for relation in to_records(Relation, list(incoming)):
            by_memory[relation.to_id].append(relation)
        return by_memory

    async def memory_counts_of_documents(self, document_ids: Sequence[str]) -> dict[str, int]:
        """How many memories each document gave (read from it or citing it), by its id; those
        of none are left out."""
        if not document_ids:
            return {}
        marks = ",".join("?" * len(document_ids))
        rows = await self.db.execute_fetchall(
            f"SELECT d, count(*) FROM (SELECT document_id AS d, id FROM memories"
            f" WHERE document_id IN ({marks}) UNION SELECT document_id, memory_id"
            f" FROM memory_sources WHERE document_id IN ({marks})) GROUP BY d",
            [*document_ids, *document_ids],
        )
        return {r[0]: r[1] for r in rows}

    async def source_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """How many documents each memory is read from, by its id; those of none are left out."""
        counts: dict[str, int] = {}
        for batch in batches(memory_ids):  # a large document's thousands of memories
            marks = ",".join("?" * len(batch))
            rows = await self.db.execute_fetchall(
                f"SELECT memory_id, count(*) FROM memory_sources WHERE memory_id IN ({marks})"
                " GROUP BY memory_id",
                batch,
            )
            counts |= {r[0]: r[1] for r in rows}
        return counts

    async def sources_of(self, memory_id: str) -> list[str]:
        rows = await self.db.execute_fetchall(
            "SELECT document_id FROM memory_sources WHERE memory_id = ? ORDER BY created_at",
            [memory_id],
        )
        return [r[0] for r in rows]


class MemoryWrites(MemoryReads, EntityWrites):
    async def insert_memories(
        self, items: Sequence[tuple[NewMemory, np.ndarray]], now: float
    ) -> None:
        """Many memories in one statement (imports and benchmarks); see insert_memory for one."""
        await self.db.executemany(
            _INSERT_MEMORY, [_memory_row(new, vector, now) for new, vector in items]
        )
        await self.db.executemany(
            "INSERT INTO memory_sources (namespace, memory_id, document_id, chunk_id, created_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                (new.namespace, new.id, new.document_id, new.chunk_id or "", now)
                for new, _ in items
                if new.document_id
            ],
        )
        for new, _ in items:
            if new.mentions:
                await self.link_mentions(new, _valid_from(new, now), now)

    async def insert_memory(self, new: NewMemory, vector: np.ndarray, now: float) -> Memory:
        rows = await self.db.execute_fetchall(
            _INSERT_MEMORY + " RETURNING seq", _memory_row(new, vector, now)
        )
        if new.document_id is not None:
            await self.add_source(new.id, new.document_id, new.chunk_id, now)
        await self.link_mentions(new, _valid_from(new, now), now)
        seq = rows[0][0]
        return (await self.memories_by_seq([seq]))[seq]

    async def rechain(self, root_id: str, now: float) -> list[Version]:
        """Order a memory's versions by valid time; the chain as it now stands, oldest first."""
        return await chains.rechain(self.db, root_id, now)

    async def add_source(
        self, memory_id: str, document_id: str, chunk_id: str | None, now: float
    ) -> None:
        await self.db.execute(
            f"INSERT INTO memory_sources {SOURCE_FROM_MEMORY} ON CONFLICT DO NOTHING",
            [memory_id, document_id, chunk_id or "", now, memory_id],
        )

    async def add_relation(
        self, from_id: str, to_id: str, kind: RelationKind, score: float, now: float
    ) -> None:
        await self.db.execute(
            # An upsert, not OR REPLACE: a replace would count the link twice in `connections`
            # (its hidden delete fires no trigger).
            "INSERT INTO relations (namespace, from_id, to_id, kind, score, created_at)"
            " SELECT namespace, ?, ?, ?, ?, ? FROM memories WHERE id = ?"
            " ON CONFLICT (namespace, from_id, to_id, kind)"
            " DO UPDATE SET score = excluded.score, created_at = excluded.created_at",
            [from_id, to_id, kind, score, now, from_id],
        )

    async def set_forgotten(
        self, memory_id: str, at: float | None, reason: str | None, now: float
    ) -> None:
        """Forget (at = now) or restore (at = None)."""
        await self.db.execute(
            "UPDATE memories SET forgotten_at = ?, forget_reason = ?, updated_at = ? WHERE id = ?",
            [at, reason, now, memory_id],
        )

    async def set_expiry(self, memory_id: str, at: float | None, now: float) -> None:
        await self.db.execute(
            "UPDATE memories SET expires_at = ?, updated_at = ? WHERE id = ?", [at, now, memory_id]
        )

    async def delete_memories(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        await self.db.execute(f"DELETE FROM memory_sources WHERE memory_id IN ({marks})", list(ids))
        named = await self.db.execute_fetchall(
            f"DELETE FROM memory_entities WHERE memory_id IN ({marks}) RETURNING entity_id",
            list(ids),
        )
        await self.drop_unnamed_entities(sorted({str(r[0]) for r in named}))
        await self.db.execute(
            f"DELETE FROM relations WHERE from_id IN ({marks}) OR to_id IN ({marks})", [*ids, *ids]
        )
        # The judge's log quotes a memory's text: a hard delete takes those calls, and the
        # labels on them, with it; and the labels on its type and on its contradictions.
        calls = f"SELECT id FROM judgements WHERE subject_id IN ({marks})"
        pair = "instr(subject_id, '|')"
        await self.db.execute(
            f"DELETE FROM labels WHERE (kind = 'judgement' AND subject_id IN ({calls}))"
            f" OR (kind = 'type' AND subject_id IN ({marks}))"
            f" OR (kind = 'contradiction' AND (substr(subject_id, 1, {pair} - 1) IN ({marks})"
            f" OR substr(subject_id, {pair} + 1) IN ({marks})))",
            [*ids, *ids, *ids, *ids],
        )
        await self.db.execute(f"DELETE FROM judgements WHERE subject_id IN ({marks})", list(ids))
        await self.db.execute(f"DELETE FROM memories WHERE id IN ({marks})", list(ids))

    async def delete_document_rows(self, document_id: str) -> None:
        """The document, its chunks (cascade), its jobs, candidates, source links and
        retraction (the memories it withdrew go with the document)."""
        await self.db.execute("DELETE FROM retractions WHERE subject_id = ?", [document_id])
        await self.db.execute(
            "DELETE FROM candidates WHERE job_id IN (SELECT id FROM jobs WHERE document_id = ?)",
            [document_id],
        )
        await self.db.execute("DELETE FROM jobs WHERE document_id = ?", [document_id])
        await self.db.execute("DELETE FROM memory_sources WHERE document_id = ?", [document_id])
        await self.db.execute("DELETE FROM documents WHERE id = ?", [document_id])

    async def rehome_memory(self, memory_id: str, document_id: str) -> None:
        """Point a memory at another of its sources (its first source is being deleted)."""
        await self.db.execute(
            "UPDATE memories SET document_id = ?, chunk_id = (SELECT nullif(chunk_id, '') FROM"
            " memory_sources WHERE memory_id = ? AND document_id = ? LIMIT 1) WHERE id = ?",
            [document_id, memory_id, document_id, memory_id],
        )

    async def set_marks(self, memory_id: str, is_static: bool, metadata: dict[str, Any]) -> None:
        """Whether a memory is static, and its metadata: what a caller said of a fact it wrote."""
        await self.db.execute(
            "UPDATE memories SET is_static = ?, metadata = ? WHERE id = ?",
            [int(is_static), metadata_json(metadata), memory_id],
        )

    async def set_derived_metadata(self, document_id: str, metadata: dict[str, Any]) -> None:
        """Memories carry their document's metadata, so filters see a change at once."""
        await self.db.execute(
            "UPDATE memories SET metadata = ? WHERE document_id = ?",
            [metadata_json(metadata), document_id],
        )


_INSERT_MEMORY = (
    "INSERT INTO memories (id, namespace, text, type, version, is_latest, root_id, parent_id,"
    " document_id, chunk_id, created_at, updated_at, event_at, valid_from, expires_at,"
    " is_static, is_inference, metadata, vector, typed_by, entities)"
    " VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _memory_row(new: NewMemory, vector: np.ndarray, now: float) -> list[Any]:
    return [
        new.id, new.namespace, new.text, new.type, new.version, new.root_id, new.parent_id,
        new.document_id, new.chunk_id, now, now, new.event_at, _valid_from(new, now), new.expires_at,
        int(new.is_static), int(new.is_inference), metadata_json(new.metadata), to_blob(vector),
        new.typed_by, list_json(new.entities),
    ]  # fmt: skip


def _valid_from(new: NewMemory, now: float) -> float:
    return new.valid_from if new.valid_from is not None else new.event_at or now
