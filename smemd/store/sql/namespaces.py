"""SQL for namespaces as wholes: making and listing them, removing one, moving its contents into
another, its profile buckets; and the store's settings, the organisation's context among them.
Each of removal and move is one transaction, so a crash part-way leaves the namespace whole or
gone, never half."""

from __future__ import annotations

from smemd.store import creators
from smemd.store.records import Document, Namespace, Removed
from smemd.store.scope import EVERY, Scope
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import DOCUMENT_COLUMNS, to_records

ORGANISATION_CONTEXT = "organizational_context"  # its key in `settings`
# The rows that belong to a namespace, each by its `namespace` column, children before parents.
_OWNED = (
    "memory_sources", "relations", "memory_entities", "candidates", "retractions", "judgements",
    "jobs", "memories", "documents", "chunks", "profile_buckets", "alias_decisions", "entities",
)  # fmt: skip
# Documents go before their chunks: on PostgreSQL a chunk's key names its document's namespace,
# and the move of a document carries its chunks (ON UPDATE CASCADE), as its removal does.
# Labels name a namespace's rows by id, and are deleted before them (the subqueries need them).
_LABELS = (
    "DELETE FROM labels WHERE subject_id IN (SELECT id FROM judgements WHERE namespace = :ns)"
    " OR subject_id IN (SELECT id FROM memories WHERE namespace = :ns)"
    # A contradiction's label names its pair of memories as "a|b".
    " OR (kind = 'contradiction' AND substr(subject_id, 1, instr(subject_id, '|') - 1)"
    " IN (SELECT id FROM memories WHERE namespace = :ns))"
)


class NamespaceReads:
    db: Connection

    async def setting(self, key: str) -> str | None:
        rows = await self.db.execute_fetchall("SELECT value FROM settings WHERE key = ?", [key])
        return next(iter(rows))[0] if rows else None

    async def namespace(self, name: str) -> Namespace | None:
        rows = await self.namespaces(name=name, limit=1, offset=0)
        return rows[0] if rows else None

    async def namespaces(
        self, *, name: str | None = None, contains: str = "", scope: Scope = EVERY, limit: int,
        offset: int,
    ) -> list[Namespace]:  # fmt: skip
        visible, params = scope.where("n.name", self.db.dialect)
        if name is not None:
            where, params = f"n.name = ? AND {visible}", [name, *params]
        else:
            where, params = f"instr(n.name, ?) > 0 AND {visible}", [contains, *params]
        sql = f"""
            SELECT n.name, n.supporting_context, n.created_at, n.updated_at,
                (SELECT count(*) FROM documents d WHERE d.namespace = n.name),
                (SELECT count(*) FROM memories m WHERE m.namespace = n.name AND m.is_latest = 1
                    AND m.forgotten_at IS NULL)
            FROM namespaces n WHERE {where} ORDER BY n.created_at DESC LIMIT ? OFFSET ?"""
        rows = await self.db.execute_fetchall(sql, [*params, limit, offset])
        return [
            Namespace(
                name=r[0],
                supporting_context=r[1],
                created_at=r[2],
                updated_at=r[3],
                document_count=r[4],
                memory_count=r[5],
            )
            for r in rows
        ]

    async def count_namespaces(self, contains: str = "", scope: Scope = EVERY) -> int:
        visible, params = scope.where("name", self.db.dialect)
        rows = await self.db.execute_fetchall(
            f"SELECT count(*) FROM namespaces WHERE instr(name, ?) > 0 AND {visible}",
            [contains, *params],
        )
        return int(next(iter(rows))[0])

    async def buckets(self, namespace: str) -> dict[str, str]:
        rows = await self.db.execute_fetchall(
            "SELECT name, description FROM profile_buckets WHERE namespace = ? ORDER BY name",
            [namespace],
        )
        return {name: description for name, description in rows}

    async def organisation_context(self) -> str | None:
        rows = list(
            await self.db.execute_fetchall(
                "SELECT value FROM settings WHERE key = ?", [ORGANISATION_CONTEXT]
            )
        )
        return str(rows[0][0]) if rows else None

    async def namespace_count(self) -> int:
        rows = list(await self.db.execute_fetchall("SELECT count(*) FROM namespaces"))
        return int(rows[0][0])

    async def open_job_documents(self, namespace: str) -> list[Document]:
        """The namespace's documents with an ingest job not yet done or failed."""
        rows = await self.db.execute_fetchall(
            f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE id IN (SELECT document_id FROM jobs"
            " WHERE namespace = ? AND phase NOT IN ('done', 'failed'))",
            [namespace],
        )
        return to_records(Document, list(rows))

    async def clashing_caller_ids(self, source: str, target: str, limit: int = 10) -> list[str]:
        """Caller ids used in both namespaces: a move would make them ambiguous."""
        rows = await self.db.execute_fetchall(
            "SELECT a.caller_id FROM documents a JOIN documents b ON b.caller_id = a.caller_id"
            " WHERE a.namespace = ? AND b.namespace = ? LIMIT ?",
            [source, target, limit],
        )
        return [r[0] for r in rows]


class NamespaceWrites(NamespaceReads):
    async def set_setting(self, key: str, value: str) -> None:
        await self.db.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [key, value],
        )

    async def remove_setting(self, key: str) -> None:
        await self.db.execute("DELETE FROM settings WHERE key = ?", [key])

    async def ensure_namespace(self, name: str, now: float) -> None:
        """Make the namespace unless it exists, counted against the request's creator (403 past
        its bound; see creators)."""
        creator = creators.current()
        if creator is None:
            await self.db.execute(
                "INSERT INTO namespaces (name, created_at, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET updated_at = excluded.updated_at",
                [name, now, now],
            )
            return
        if await self.db.execute(
            "UPDATE namespaces SET updated_at = ? WHERE name = ?", [now, name]
        ):
            return
        rows = await self.db.execute_fetchall(
            "SELECT count(*) FROM namespaces WHERE created_by = ?", [creator.name]
        )
        made = int(next(iter(rows))[0])
        if made >= creator.limit:
            raise creators.refusal(creator, made)
        await self.db.execute(
            "INSERT INTO namespaces (name, created_at, updated_at, created_by) VALUES (?, ?, ?, ?)",
            [name, now, now, creator.name],
        )

    async def set_supporting_context(self, name: str, text: str, now: float) -> None:
        await self.db.execute(
            "UPDATE namespaces SET supporting_context = ?, updated_at = ? WHERE name = ?",
            [text, now, name],
        )

    async def _counts(self, namespace: str) -> Removed:
        rows = list(
            await self.db.execute_fetchall(
                "SELECT (SELECT count(*) FROM documents WHERE namespace = :ns),"
                " (SELECT count(*) FROM memories WHERE namespace = :ns)",
                {"ns": namespace},
            )
        )
        return Removed(documents=int(rows[0][0]), memories=int(rows[0][1]))

    async def remove_namespace(self, namespace: str) -> Removed:
        """Every row of the namespace and every row that names one of them, and the namespace."""
        counts = await self._counts(namespace)
        await self.db.execute(_LABELS, {"ns": namespace})
        for table in _OWNED:
            await self.db.execute(f"DELETE FROM {table} WHERE namespace = ?", [namespace])
        await self.db.execute("DELETE FROM namespaces WHERE name = ?", [namespace])
        return counts

    async def move_namespace(self, source: str, target: str) -> Removed:
        """Every row of `source` into `target` (which exists); its buckets join the target's
        where the names are free. Ids are global, so nothing else needs renaming. (A store
        distributed by namespace refuses this: it changes the distribution column; README.)"""
        counts = await self._counts(source)
        await self.db.execute(
            "INSERT INTO profile_buckets (namespace, name, description, created_at)"
            " SELECT ?, name, description, created_at FROM profile_buckets WHERE namespace = ?"
            " ON CONFLICT DO NOTHING",
            [target, source],
        )
        await self._move_entities(source, target)
        for table in _OWNED:
            if table not in ("profile_buckets", "entities"):
                await self.db.execute(
                    f"UPDATE {table} SET namespace = ? WHERE namespace = ?", [target, source]
                )
        await self.db.execute("DELETE FROM profile_buckets WHERE namespace = ?", [source])
        await self.db.execute("DELETE FROM namespaces WHERE name = ?", [source])
        return counts

    async def _move_entities(self, source: str, target: str) -> None:
        """Entities the target lacks move over; one it has by name takes the source's links."""
        params = {"source": source, "target": target}
        await self.db.execute(
            "UPDATE entities SET namespace = :target WHERE namespace = :source AND lower(name)"
            " NOT IN (SELECT lower(name) FROM entities WHERE namespace = :target)",
            params,
        )
        twin = (
            "(SELECT t.id FROM entities t, entities s WHERE s.id = memory_entities.entity_id"
            " AND t.namespace = :target AND lower(t.name) = lower(s.name))"
        )
        left = "SELECT id FROM entities WHERE namespace = :source"
        # A link the memory already has to the twin stays where it is (and goes below).
        await self.db.execute(
            f"UPDATE memory_entities SET entity_id = {twin} WHERE entity_id IN ({left})"
            " AND NOT EXISTS (SELECT 1 FROM memory_entities h WHERE"
            f" h.memory_id = memory_entities.memory_id AND h.entity_id = {twin})",
            params,
        )
        least, greatest = self.db.dialect.least, self.db.dialect.greatest
        same_name = "s.namespace = :source AND lower(s.name) = lower(entities.name)"
        earliest = f"(SELECT min(s.first_seen) FROM entities s WHERE {same_name})"
        latest = f"(SELECT max(s.last_seen) FROM entities s WHERE {same_name})"
        await self.db.execute(
            f"UPDATE entities SET first_seen = {least('first_seen', earliest)},"
            f" last_seen = {greatest('last_seen', latest)}"
            " WHERE namespace = :target AND lower(name) IN"
            " (SELECT lower(name) FROM entities WHERE namespace = :source)",
            params,
        )
        # Names merged into an entity the target already had now point at the target's.
        await self.db.execute(
            "UPDATE entities SET merged_into = (SELECT coalesce(t.merged_into, t.id) FROM"
            " entities t, entities s WHERE s.id = entities.merged_into AND t.namespace = :target"
            f" AND lower(t.name) = lower(s.name)) WHERE merged_into IN ({left})",
            params,
        )
        await self.db.execute(f"DELETE FROM memory_entities WHERE entity_id IN ({left})", params)
        await self.db.execute("DELETE FROM entities WHERE namespace = :source", params)

    async def put_buckets(self, namespace: str, buckets: dict[str, str], now: float) -> None:
        await self.db.executemany(
            "INSERT INTO profile_buckets (namespace, name, description, created_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (namespace, name)"
            " DO UPDATE SET description = excluded.description",
            [(namespace, name, text, now) for name, text in buckets.items()],
        )

    async def delete_buckets(self, namespace: str, names: list[str]) -> None:
        await self.db.executemany(
            "DELETE FROM profile_buckets WHERE namespace = ? AND name = ?",
            [(namespace, name) for name in names],
        )

    async def set_organisation_context(self, text: str) -> None:
        await self.db.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [ORGANISATION_CONTEXT, text],
        )
