"""A namespace's rows for an export (smemd.engine.exporting), whichever backend.

Every exported table's rows come as column -> value, JSON columns decoded, in key order and a
page at a time (keyset pages: constant memory on both drivers, whose cursors would otherwise
hold a whole result), all under one snapshot of the store (`one_moment`), so an export is of
one moment while writes go on. Labels have no namespace of their own: a label goes with the
namespace of the memory, judgement or contradiction it is on.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import batches

# What an export calls each kind of row -> its table, and its key's columns after the
# namespace: the order rows come in, and the seek of the next page.
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "namespace": ("namespaces", ("name",)),
    "profileBucket": ("profile_buckets", ("name",)),
    "document": ("documents", ("seq",)),
    "chunk": ("chunks", ("seq",)),
    "memory": ("memories", ("seq",)),
    "source": ("memory_sources", ("memory_id", "document_id", "chunk_id")),
    "relation": ("relations", ("from_id", "to_id", "kind")),
    "entity": ("entities", ("seq",)),
    "mention": ("memory_entities", ("memory_id", "entity_id")),
    "aliasDecision": ("alias_decisions", ("id",)),
    "judgement": ("judgements", ("seq",)),
    "retraction": ("retractions", ("id",)),
}
JSON_COLUMNS = frozenset({"metadata", "entities", "options", "probabilities", "rows", "effects"})
PAGE = 500
_decode = msgspec.json.decode


class ExportReads:
    db: Connection

    @contextlib.asynccontextmanager
    async def one_moment(self) -> AsyncIterator[None]:
        """Every read inside sees the store as of its start (a read-only transaction)."""
        await self.db.execute(self.db.dialect.begin_snapshot())
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # a failed read may have ended it already
                await self.db.execute("ROLLBACK")

    async def export_rows(
        self, namespace: str, kind: str, columns: Sequence[str]
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The namespace's rows of one `kind` (KINDS), `columns` of each, a page at a time."""
        table, key = KINDS[kind]
        own = "name" if table == "namespaces" else "namespace"
        picked = list(dict.fromkeys([*columns, *key]))
        after: list[Any] = []
        while True:
            seek = f" AND ({', '.join(key)}) > ({', '.join('?' * len(key))})" if after else ""
            rows = await self.db.execute_fetchall(
                f"SELECT {', '.join(picked)} FROM {table} WHERE {own} = ?{seek}"
                f" ORDER BY {', '.join(key)} LIMIT {PAGE}",
                [namespace, *after],
            )
            if not rows:
                return
            page = [_decoded(dict(zip(picked, row, strict=True))) for row in rows]
            after = [page[-1][column] for column in key]
            yield [{column: values[column] for column in columns} for values in page]
            if len(rows) < PAGE:
                return

    async def export_labels(self, namespace: str) -> list[dict[str, Any]]:
        """The labels on the namespace's memories, judgements and contradictions (a person's
        word, so few: they are read whole)."""
        rows = await self.db.execute_fetchall(
            "SELECT l.kind, l.subject_id, l.value, l.created_at FROM labels l"
            " WHERE (l.kind = 'type' AND l.subject_id IN"
            " (SELECT id FROM memories WHERE namespace = ?))"
            " OR (l.kind = 'judgement' AND l.subject_id IN"
            " (SELECT id FROM judgements WHERE namespace = ?))"
            " ORDER BY l.kind, l.subject_id",
            [namespace, namespace],
        )
        found = [
            dict(zip(("kind", "subject_id", "value", "created_at"), r, strict=True)) for r in rows
        ]
        pairs = await self.db.execute_fetchall(
            "SELECT kind, subject_id, value, created_at FROM labels"
            " WHERE kind = 'contradiction' ORDER BY subject_id"
        )
        # A pair's subject is its two memory ids joined by "|": it is the namespace's when its
        # first memory is.
        firsts = sorted({str(row[1]).partition("|")[0] for row in pairs})
        ours: set[str] = set()
        for ids in batches(firsts):
            held = await self.db.execute_fetchall(
                f"SELECT id FROM memories WHERE namespace = ? AND id IN ({', '.join('?' * len(ids))})",
                [namespace, *ids],
            )
            ours.update(str(row[0]) for row in held)
        for row in pairs:
            if str(row[1]).partition("|")[0] in ours:
                found.append(
                    dict(zip(("kind", "subject_id", "value", "created_at"), row, strict=True))
                )
        return found


def _decoded(values: dict[str, Any]) -> dict[str, Any]:
    for column in JSON_COLUMNS & values.keys():
        if isinstance(values[column], str | bytes):
            values[column] = _decode(values[column])
    return values
