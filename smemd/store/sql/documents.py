"""SQL for documents and their chunks, and the turns around a conversation's turn."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from smemd.store.records import Chunk, ChunkRow, Document, IndexRows, Phase
from smemd.store.scope import EVERY, Scope
from smemd.store.sql.connection import Connection
from smemd.store.sql.retractions import CHUNK_RETRACTED
from smemd.store.sql.rows import (
    CHUNK_COLUMNS,
    CHUNK_WORDS,
    DOCUMENT_COLUMNS,
    DOCUMENT_OPENING_COLUMNS,
    batches,
    metadata_json,
    to_record,
    to_records,
)
from smemd.store.vectors import to_blob


class DocumentReads:
    db: Connection

    async def turns_before(
        self, document: Document, limit: int, chars: int, gap_s: float
    ) -> list[Document]:
        """The documents of its namespace before it in its session, the last first, at most
        `limit`, each one's content cut to its first `chars` characters: the turns before, when
        documents are a conversation's turns dated by their session (the same instant, stored
        before it) or by message (each dated at most `gap_s` after the one before). An undated
        document's are the undated ones stored before it, by when each was stored: the turns
        an agent adds as they happen, without dates."""
        if document.content_date is not None:
            column, date, undated = "content_date", document.content_date, ""
        else:
            column, date, undated = "created_at", document.created_at, " AND content_date IS NULL"
        return await self._session_turns(document, column, date, undated, "<", limit, chars, gap_s)

    async def turns_after(
        self, document: Document, limit: int, chars: int, gap_s: float
    ) -> list[Document]:
        """The dated documents of its namespace after it in its session, the next first, at
        most `limit`, each one's content cut to its first `chars` characters: `turns_before`
        read the other way, the turns whose context it may be. An undated document has none:
        it follows every undated one stored before it."""
        if document.content_date is None:
            return []
        return await self._session_turns(
            document, "content_date", document.content_date, "", ">", limit, chars, gap_s
        )

    async def _session_turns(
        self, document: Document, column: str, date: float, undated: str, way: str,
        limit: int, chars: int, gap_s: float,
    ) -> list[Document]:  # fmt: skip
        """The turns on one side (`way`, "<" or ">") of `document` in its session, the nearest
        first. Those at its instant, then those at other instants: two scans of the session
        index that each start where they should, where one with an OR would read every document
        of its instant stored on the other side (a client that dates by the day stores
        thousands, and a batch added at once is chunked while the rest of it is stored)."""
        order = "DESC" if way == "<" else "ASC"
        select = f"SELECT {DOCUMENT_OPENING_COLUMNS} FROM documents WHERE namespace = ?{undated}"
        rows = list(await self.db.execute_fetchall(
            f"{select} AND {column} = ? AND seq {way} ? ORDER BY seq {order} LIMIT ?",
            [chars, document.namespace, date, document.seq, limit],
        ))  # fmt: skip
        if len(rows) < limit:
            # No farther than `limit` gaps: past that, the session has ended or the limit is met.
            edge, beyond = (
                (date - limit * gap_s, ">=") if way == "<" else (date + limit * gap_s, "<=")
            )
            rows += await self.db.execute_fetchall(
                f"{select} AND {column} {way} ? AND {column} {beyond} ?"
                f" ORDER BY {column} {order}, seq {order} LIMIT ?",
                [chars, document.namespace, date, edge, limit - len(rows)],
            )
        turns = []
        for turn in to_records(Document, rows):
            when: float = getattr(turn, column)  # not None: the query's bounds
            if abs(when - date) > gap_s:
                break
            turns.append(turn)
            date = when
        return turns

    async def document(self, namespace: str, ref: str) -> Document | None:
        """By smem's id or the caller's id."""
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE namespace = ? AND (id = ? OR caller_id = ?)"
            " ORDER BY id = ? DESC LIMIT 1",
            [namespace, ref, ref, ref],
        )
        return to_record(Document, next(iter(rows))) if rows else None

    async def documents_by_ref(self, namespace: str, refs: Sequence[str]) -> dict[str, Document]:
        """Each ref's document, by smem's id or else the caller's, keyed by the ref given; refs
        of no document in the namespace are left out."""
        if not refs:
            return {}
        marks = ",".join("?" * len(refs))
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE namespace = ?"
            f" AND (id IN ({marks}) OR caller_id IN ({marks}))",
            [namespace, *refs, *refs],
        )
        docs = to_records(Document, list(rows))
        by_id = {d.id: d for d in docs}
        by_caller = {d.caller_id: d for d in docs if d.caller_id is not None}
        return {ref: doc for ref in refs if (doc := by_id.get(ref) or by_caller.get(ref))}

    async def document_in_scope(self, ref: str, scope: Scope = EVERY) -> Document | None:
        """By smem's id, else by the caller's id in any namespace in scope (the most recently
        updated, when several namespaces use it): for the legacy routes that name no namespace."""
        visible, params = scope.where("namespace", self.db.dialect)
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ? AND {visible}", [ref, *params]
        )
        if not rows:
            # One walk of the (namespace, caller_id) index per namespace, not of every document.
            names, params = scope.where("name", self.db.dialect)
            rows = await self.db.execute_fetchall(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE caller_id = ? AND namespace IN"
                f" (SELECT name FROM namespaces WHERE {names}) ORDER BY updated_at DESC LIMIT 1",
                [ref, *params],
            )
        return to_record(Document, next(iter(rows))) if rows else None

    async def document_by_id(self, document_id: str) -> Document | None:
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id = ?", [document_id]
        )
        return to_record(Document, next(iter(rows))) if rows else None

    async def documents_of_ingest(self, namespace: str, ingest_id: str) -> list[Document]:
        """The documents one add brought (smemd.engine.ingest.ingest_ids), in the order made."""
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE namespace = ? AND ingest_id = ?"
            " ORDER BY seq",
            [namespace, ingest_id],
        )
        return [to_record(Document, row) for row in rows]

    async def documents_by_id(self, ids: Sequence[str]) -> dict[str, Document]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id IN ({marks})", list(ids)
        )
        return {d.id: d for d in to_records(Document, list(rows))}

    async def chunks_of(self, document_id: str) -> list[Chunk]:
        rows = await self.db.execute_fetchall(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? ORDER BY position",
            [document_id],
        )
        return to_records(Chunk, list(rows))

    async def chunks_by_seq(self, seqs: Sequence[int]) -> dict[int, Chunk]:
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        rows = await self.db.execute_fetchall(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE seq IN ({marks})", list(seqs)
        )
        return {c.seq: c for c in to_records(Chunk, list(rows))}

    async def chunks_by_id(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """These chunks, by id: the few a search's memories were read from, whatever the size
        of their documents."""
        found: dict[str, Chunk] = {}
        for some in batches(list(ids)):
            rows = await self.db.execute_fetchall(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({','.join('?' * len(some))})",
                some,
            )
            found.update((c.id, c) for c in to_records(Chunk, list(rows)))
        return found

    async def chunks_at(self, positions: Mapping[str, Collection[int]]) -> dict[str, list[Chunk]]:
        """Each document's chunks at these positions, in order, by its id: those beside a
        search's results, whatever the size of their documents."""
        found: dict[str, list[Chunk]] = {}
        for document_id, wanted in positions.items():
            found[document_id] = []
            for some in batches(sorted(wanted)):
                rows = await self.db.execute_fetchall(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ?"
                    f" AND position IN ({','.join('?' * len(some))}) ORDER BY position",
                    [document_id, *some],
                )
                found[document_id] += to_records(Chunk, list(rows))
        return found

    async def chunk_index_rows(self, namespace: str, after: int, limit: int) -> IndexRows:
        """A page of chunks with vectors (seq > `after`); live unless their document is retracted."""
        rows = await self.db.execute_fetchall(
            f"SELECT c.seq, c.vector, {CHUNK_WORDS}, NOT {CHUNK_RETRACTED} FROM chunks c"
            " WHERE c.namespace = ? AND c.seq > ? AND c.vector IS NOT NULL ORDER BY c.seq LIMIT ?",
            [namespace, after, limit],
        )
        return IndexRows.of(list(rows))

    async def chunks_without_vectors(
        self, document_id: str, limit: int | None = None
    ) -> list[Chunk]:
        """The first `limit` (all, by default) of the document's chunks not yet embedded."""
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE document_id = ? AND vector IS NULL"
        sql += " ORDER BY position" + ("" if limit is None else " LIMIT ?")
        params = [document_id] if limit is None else [document_id, limit]
        rows = await self.db.execute_fetchall(sql, params)
        return to_records(Chunk, list(rows))

    async def chunk_index_rows_of(
        self, document_id: str, chunk_ids: Sequence[str] = ()
    ) -> IndexRows:
        """The document's embedded chunks as the index holds them (only `chunk_ids`, if given)."""
        among = f" AND c.id IN ({', '.join('?' * len(chunk_ids))})" if chunk_ids else ""
        rows = await self.db.execute_fetchall(
            f"SELECT c.seq, c.vector, {CHUNK_WORDS}, NOT {CHUNK_RETRACTED} FROM chunks c"
            f" WHERE c.document_id = ? AND c.vector IS NOT NULL{among} ORDER BY c.seq",
            [document_id, *chunk_ids],
        )
        return IndexRows.of(list(rows))

    async def document_count(self, namespace: str) -> int:
        rows = await self.db.execute_fetchall(
            "SELECT count(*) FROM documents WHERE namespace = ?", [namespace]
        )
        return int(next(iter(rows))[0])


class DocumentWrites(DocumentReads):
    async def insert_document(self, doc: Document) -> Document:
        values = msgspec.structs.asdict(doc)
        del values["seq"]
        values["metadata"] = metadata_json(doc.metadata)
        marks = ", ".join("?" * len(values))
        rows = await self.db.execute_fetchall(
            f"INSERT INTO documents ({', '.join(values)}) VALUES ({marks}) RETURNING seq",
            list(values.values()),
        )
        return msgspec.structs.replace(doc, seq=rows[0][0])

    async def revise_document(self, doc: Document, **changes: Any) -> Document:
        """Apply `changes` (field → value) to a document row and return the new record."""
        if "metadata" in changes:
            changes_sql = {**changes, "metadata": metadata_json(changes["metadata"])}
        else:
            changes_sql = changes
        assignments = ", ".join(f"{name} = ?" for name in changes_sql)
        await self.db.execute(
            f"UPDATE documents SET {assignments} WHERE id = ?", [*changes_sql.values(), doc.id]
        )
        revised = await self.document_by_id(doc.id)
        assert revised is not None
        return revised

    async def set_document_status(
        self, document_id: str, status: Phase, now: float, error: str | None = None
    ) -> None:
        await self.db.execute(
            "UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ?",
            [status, error, now, document_id],
        )

    async def replace_chunks(
        self, document: Document, pieces: Sequence[ChunkRow], now: float
    ) -> list[int]:
        """Make these (id, position, heading, text, context, said_at) the document's chunks;
        return the seqs removed.

        Unchanged text in an unchanged context keeps its vector, so a revision re-embeds only
        what changed.
        """
        rows = await self.db.execute_fetchall(
            "SELECT seq, text, context, vector FROM chunks WHERE document_id = ?", [document.id]
        )
        vectors = {(row[1], row[2]): row[3] for row in rows}
        await self.db.execute("DELETE FROM chunks WHERE document_id = ?", [document.id])
        await self.db.executemany(
            "INSERT INTO chunks (id, document_id, namespace, position, heading, text, context,"
            " said_at, vector, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (cid, document.id, document.namespace, pos, heading, text, context, said_at,
                 vectors.get((text, context)), now)
                for cid, pos, heading, text, context, said_at in pieces
            ],
        )  # fmt: skip
        return [row[0] for row in rows]

    async def set_chunk_vectors(
        self, chunks: Sequence[tuple[str, str, str]], vectors: np.ndarray
    ) -> None:
        """Each (id, the context it was read with, the context it is embedded with) chunk's
        vector, and that context; a chunk whose context changed since it was read is left, as
        whoever changed it embeds it again."""
        await self.db.executemany(
            "UPDATE chunks SET vector = ?, context = ? WHERE id = ? AND context = ?",
            [
                (to_blob(v), context, cid, read)
                for (cid, read, context), v in zip(chunks, vectors, strict=True)
            ],
        )
