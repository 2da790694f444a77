"""A namespace's rows from an import (smemd.engine.imports), whichever backend: the rows of an
export (smemd.store.sql.exporting) put back as they were, under the namespace they are given.

The engine has checked every record against the format and against the others (references,
keys); what it cannot know without the store, whether an id is already taken, the store says
here. A row's `seq` is the store's own: they come in the export's order, so they keep it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.store.sql.connection import Connection
from smemd.store.sql.exporting import JSON_COLUMNS, KINDS
from smemd.store.sql.rows import batches

_encode = msgspec.json.encode
# The tables a namespace's data is in: a namespace with a row in any of them is not empty.
HOLDING = ("documents", "memories", "entities", "judgements", "profile_buckets", "retractions")
# The kinds whose records carry an id the store keeps unique.
IDENTIFIED = ("document", "chunk", "memory", "entity", "aliasDecision", "judgement", "retraction")


class ImportReads:
    db: Connection

    async def holds_data(self, namespace: str) -> bool:
        for table in HOLDING:
            if await self.db.execute_fetchall(
                f"SELECT 1 FROM {table} WHERE namespace = ? LIMIT 1", [namespace]
            ):
                return True
        return False

    async def taken_ids(self, kind: str, ids: Sequence[str]) -> list[str]:
        """Which of `ids` (of a kind in IDENTIFIED) the store holds already, in any namespace."""
        table = KINDS[kind][0]
        taken: list[str] = []
        for some in batches(list(ids)):
            rows = await self.db.execute_fetchall(
                f"SELECT id FROM {table} WHERE id IN ({', '.join('?' * len(some))})", some
            )
            taken.extend(str(row[0]) for row in rows)
        return taken


class ImportWrites:
    db: Connection

    async def import_rows(self, namespace: str, kind: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows of one kind (KINDS, or `label`), column -> value as an export gave them
        (JSON columns decoded), each put under `namespace`."""
        if not rows:
            return
        columns = list(rows[0])
        if kind == "namespace":
            # Made already (ensure_namespace, against the importer's bound on namespaces): its
            # own columns are put back, its creator stays whoever imports it.
            kept = [c for c in columns if c != "created_by"]
            await self.db.execute(
                f"UPDATE namespaces SET {', '.join(f'{c} = ?' for c in kept)} WHERE name = ?",
                [*(rows[0][c] for c in kept), namespace],
            )
            return
        if kind == "label":
            table, own = "labels", None  # a label is its subject's namespace's
        else:
            table, own = KINDS[kind][0], "namespace"
        names = [*columns, own] if own else columns
        encoded = [
            [_value(c, row[c]) for c in columns] + ([namespace] if own else []) for row in rows
        ]
        await self.db.executemany(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            encoded,
        )


def _value(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS:
        return _encode(value).decode()
    return int(value) if isinstance(value, bool) else value  # flags are integers in both
