"""SQL for ingest jobs, the documents they work on, and the candidate facts between their phases."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from smemd.store.records import Candidate, Document, Job, Phase
from smemd.store.scope import EVERY, Scope
from smemd.store.sql.connection import Connection
from smemd.store.sql.documents import DocumentWrites
from smemd.store.sql.rows import JOB_COLUMNS, list_json, page, to_record, to_records
from smemd.store.vectors import from_blob, to_blob


class JobReads:
    db: Connection

    async def unfinished_documents(
        self, scope: Scope, namespace: str | None, *, include_failed: bool, since: float | None,
        limit: int, offset: int,
    ) -> tuple[list[Document], int]:  # fmt: skip
        """Documents with an open job (and failed ones, with `include_failed`) in `namespace`, or
        in every namespace in scope; newest change first. Open jobs are found by their index."""
        visible, params = scope.where("namespace", self.db.dialect)
        open_jobs = "id IN (SELECT document_id FROM jobs WHERE phase NOT IN ('done', 'failed'))"
        where = f"({open_jobs} OR status = 'failed')" if include_failed else open_jobs
        where = f"{where} AND {visible}"
        if namespace is not None:
            where, params = f"{where} AND namespace = ?", [*params, namespace]
        if since is not None:
            where, params = f"{where} AND updated_at >= ?", [*params, since]
        return await page(
            self.db, Document, f"FROM documents WHERE {where}", params,
            order="updated_at DESC, seq DESC", limit=limit, offset=offset,
        )  # fmt: skip

    async def job(self, job_id: str) -> Job | None:
        rows = await self.db.execute_fetchall(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", [job_id]
        )
        return to_record(Job, next(iter(rows))) if rows else None

    async def open_jobs(self, limit: int = 100) -> list[Job]:
        rows = await self.db.execute_fetchall(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE phase NOT IN ('done', 'failed')"
            " ORDER BY priority DESC, seq LIMIT ?",
            [limit],
        )
        return to_records(Job, list(rows))

    async def recent_jobs(
        self, limit: int, namespace: str | None = None, scope: Scope = EVERY
    ) -> list[Job]:
        where, params = scope.where("namespace", self.db.dialect)
        if namespace:
            where, params = f"{where} AND namespace = ?", [*params, namespace]
        rows = await self.db.execute_fetchall(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where} ORDER BY seq DESC LIMIT ?",
            [*params, limit],
        )
        return to_records(Job, list(rows))

    async def job_counts(
        self, namespace: str | None = None, scope: Scope = EVERY
    ) -> dict[str, int]:
        where, params = scope.where("namespace", self.db.dialect)
        if namespace:
            where, params = f"{where} AND namespace = ?", [*params, namespace]
        rows = await self.db.execute_fetchall(
            f"SELECT phase, count(*) FROM jobs WHERE {where} GROUP BY phase", params
        )
        return {r[0]: r[1] for r in rows}

    async def open_job_phases(self) -> dict[str, int]:
        """Every namespace's jobs queued or under way, by phase: a walk of the open jobs' index."""
        rows = await self.db.execute_fetchall(
            "SELECT phase, count(*) FROM jobs WHERE phase NOT IN ('done', 'failed') GROUP BY phase"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def open_job_count(self, namespace: str) -> int:
        """Jobs queued or under way: a walk of the open jobs' index, which stays small."""
        rows = await self.db.execute_fetchall(
            "SELECT count(*) FROM jobs WHERE phase NOT IN ('done', 'failed') AND namespace = ?",
            [namespace],
        )
        return int(next(iter(rows))[0])

    async def candidates(self, job_id: str) -> list[tuple[Candidate, np.ndarray]]:
        rows = await self.db.execute_fetchall(
            "SELECT job_id, position, chunk_id, text, type, event_at, typed_by, entities, vector"
            " FROM candidates"
            " WHERE job_id = ? ORDER BY position",
            [job_id],
        )
        return [
            (
                Candidate(
                    job_id=r[0],
                    position=r[1],
                    chunk_id=r[2],
                    text=r[3],
                    type=r[4],
                    event_at=r[5],
                    typed_by=r[6],
                    entities=msgspec.json.decode(r[7], type=list[str]),
                ),
                from_blob(r[8]),
            )
            for r in rows
        ]


class JobWrites(DocumentWrites, JobReads):
    """A job's phase is mirrored on its document (DocumentWrites.set_document_status)."""

    async def insert_job(
        self, job_id: str, namespace: str, document_id: str, revision: int, now: float,
        priority: int = 0,
    ) -> None:  # fmt: skip
        """A queued job; a higher `priority` is worked first (in order of creation within one)."""
        await self.db.execute(
            "INSERT INTO jobs (id, namespace, document_id, revision, phase, created_at, updated_at,"
            " priority) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)",
            [job_id, namespace, document_id, revision, now, now, priority],
        )

    async def set_job_phase(
        self, job: Job, phase: Phase, now: float, error: str | None = None
    ) -> None:
        """Advance a job and mirror the phase on its document, in the caller's transaction."""
        await self.db.execute(
            "UPDATE jobs SET phase = ?, error = ?, updated_at = ? WHERE id = ?",
            [phase, error, now, job.id],
        )
        await self.set_document_status(job.document_id, phase, now, error)

    async def count_attempt(self, job_id: str) -> None:
        await self.db.execute("UPDATE jobs SET attempts = attempts + 1 WHERE id = ?", [job_id])

    async def requeue_open_job(self, document: Document, revision: int, now: float) -> bool:
        """The document's unfinished job starts again, queued, on `revision` in the document's
        namespace, its candidates dropped; False when it has none. Nothing failed: a move or a
        new content only made the work so far moot (the worker doing it sees the revision and
        drops it)."""
        rows = await self.db.execute_fetchall(
            "SELECT id FROM jobs WHERE document_id = ? AND phase NOT IN ('done', 'failed')",
            [document.id],
        )
        ids = [row[0] for row in rows]
        if not ids:
            return False
        await self.db.executemany("DELETE FROM candidates WHERE job_id = ?", [(i,) for i in ids])
        await self.db.executemany(
            "UPDATE jobs SET revision = ?, namespace = ?, phase = 'queued', attempts = 0,"
            " error = NULL, updated_at = ? WHERE id = ?",
            [(revision, document.namespace, now, i) for i in ids],
        )
        return True

    async def insert_candidates(self, items: Sequence[tuple[Candidate, np.ndarray]]) -> None:
        await self.db.executemany(
            "INSERT INTO candidates (namespace, job_id, position, chunk_id, text, type,"
            " event_at, typed_by, entities, vector)"
            " SELECT namespace, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM jobs WHERE id = ?"
            " ON CONFLICT (namespace, job_id, position) DO UPDATE SET"
            " chunk_id = excluded.chunk_id, text = excluded.text, type = excluded.type,"
            " event_at = excluded.event_at, typed_by = excluded.typed_by,"
            " entities = excluded.entities, vector = excluded.vector",
            [
                (
                    c.job_id,
                    c.position,
                    c.chunk_id,
                    c.text,
                    c.type,
                    c.event_at,
                    c.typed_by,
                    list_json(c.entities),
                    to_blob(v),
                    c.job_id,
                )
                for c, v in items
            ],
        )

    async def delete_candidates(self, job_id: str) -> None:
        await self.db.execute("DELETE FROM candidates WHERE job_id = ?", [job_id])
