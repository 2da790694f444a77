"""A namespace's rows from an import (smemd.engine.imports), whichever backend: the rows of an
export (smemd.store.sql.exporting) put back as they were, under the namespace they are given.

The engine has checked every record against the format and against the others (references,
keys); what it cannot know without the store, whether an id is already taken, the store says
here. A row's `seq` is the store's own: they come in the export's order, so they keep it.

An import that merges into a namespace with data says, for each kind of row, what to do with a
key the namespace holds already: `skip` it (the namespace's row stays) or `replace` it (the
file's row takes its place, under the same key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.store.queries import OnKey
from smemd.store.records import entity_key
from smemd.store.sql.connection import Connection
from smemd.store.sql.exporting import JSON_COLUMNS, KINDS
from smemd.store.sql.rows import batches

_encode = msgspec.json.encode
# The tables a namespace's data is in: a namespace with a row in any of them is not empty.
HOLDING = ("documents", "memories", "entities", "judgements", "profile_buckets", "retractions")
# The kinds whose records carry an id the store keeps unique.
IDENTIFIED = ("document", "chunk", "memory", "entity", "aliasDecision", "judgement", "retraction")
# The other kinds, keyed by what their rows link (labels have no namespace of their own).
LINKED: dict[str, tuple[str, tuple[str, ...]]] = {
    **{kind: KINDS[kind] for kind in ("profileBucket", "source", "relation", "mention")},
    "label": ("labels", ("kind", "subject_id")),
}


class ImportReads:
    db: Connection

    async def holds_data(self, namespace: str) -> bool:
        for table in HOLDING:
            if await self.db.execute_fetchall(
                f"SELECT 1 FROM {table} WHERE namespace = ? LIMIT 1", [namespace]
            ):
                return True
        return False

    async def taken_ids(self, kind: str, ids: Sequence[str]) -> dict[str, str]:
        """Which of `ids` (of a kind in IDENTIFIED) the store holds already, in any namespace:
        id -> the namespace that holds it."""
        table = KINDS[kind][0]
        taken: dict[str, str] = {}
        for some in batches(list(ids)):
            rows = await self.db.execute_fetchall(
                f"SELECT id, namespace FROM {table} WHERE id IN ({', '.join('?' * len(some))})",
                some,
            )
            taken.update((str(row[0]), str(row[1])) for row in rows)
        return taken

    async def held_names(self, namespace: str, kind: str, names: Sequence[str]) -> dict[str, str]:
        """The namespace's documents by custom id (`kind` "document") or entities by name
        ("entity"; keyed by entity_key), among `names`: -> the id."""
        table, column = ("documents", "caller_id") if kind == "document" else ("entities", "name")
        compared = column if kind == "document" else f"lower({column})"
        held: dict[str, str] = {}
        for some in batches(list(names)):
            asked = ", ".join(("lower(?)" if kind == "entity" else "?") for _ in some)
            rows = await self.db.execute_fetchall(
                f"SELECT {column}, id FROM {table} WHERE namespace = ? AND {compared} IN ({asked})",
                [namespace, *some],
            )
            held.update(
                (str(row[0]) if kind == "document" else entity_key(str(row[0])), str(row[1]))
                for row in rows
            )
        return held

    async def split_chains(self, namespace: str) -> list[tuple[str, list[str]]]:
        """A few of the namespace's memory chains with more than one latest version (none, in a
        sound store): each chain's root and those versions."""
        roots = await self.db.execute_fetchall(
            "SELECT root_id FROM memories WHERE namespace = ? AND is_latest = 1"
            " GROUP BY root_id HAVING count(*) > 1 ORDER BY root_id LIMIT 3",
            [namespace],
        )
        found = []
        for (root,) in roots:
            rows = await self.db.execute_fetchall(
                "SELECT id FROM memories WHERE namespace = ? AND root_id = ? AND is_latest = 1"
                " ORDER BY id",
                [namespace, root],
            )
            found.append((str(root), [str(row[0]) for row in rows]))
        return found


class ImportWrites:
    db: Connection

    async def import_rows(
        self, namespace: str, kind: str, rows: Sequence[dict[str, Any]], on_key: OnKey = "insert"
    ) -> None:
        """Put rows of one kind (KINDS, or `label`), column -> value as an export gave them
        (JSON columns decoded), each under `namespace`. A row of a kind in IDENTIFIED is
        inserted (`insert`) or takes the place of the namespace's row of its id (`replace`);
        one of a linked kind is inserted, or where its key is held, passed over (`skip`) or
        put in the held row's place (`replace`)."""
        if not rows or (on_key == "skip" and kind in IDENTIFIED):
            return
        columns = list(rows[0])
        if kind == "namespace":
            # Made already (ensure_namespace, against the importer's bound on namespaces): its
            # own columns are put back, its creator stays whoever imports it.
            if on_key == "skip":
                return
            kept = [c for c in columns if c != "created_by"]
            await self.db.execute(
                f"UPDATE namespaces SET {', '.join(f'{c} = ?' for c in kept)} WHERE name = ?",
                [*(rows[0][c] for c in kept), namespace],
            )
            return
        table, own = (
            (LINKED["label"][0], None) if kind == "label" else (KINDS[kind][0], "namespace")
        )
        if on_key == "replace" and kind in IDENTIFIED:
            await self.db.executemany(
                f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)}"
                " WHERE namespace = ? AND id = ?",
                [[*(_value(c, row[c]) for c in columns), namespace, row["id"]] for row in rows],
            )
            return
        if on_key == "replace":  # a linked kind: the held rows of these keys go first
            key = LINKED[kind][1]
            where = " AND ".join([*(f"{c} = ?" for c in key), *(["namespace = ?"] if own else [])])
            await self.db.executemany(
                f"DELETE FROM {table} WHERE {where}",
                [[*(row[c] for c in key), *([namespace] if own else [])] for row in rows],
            )
        names = [*columns, own] if own else columns
        encoded = [
            [_value(c, row[c]) for c in columns] + ([namespace] if own else []) for row in rows
        ]
        passed = " ON CONFLICT DO NOTHING" if on_key == "skip" else ""
        await self.db.executemany(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            + passed,
            encoded,
        )

    async def rename_merged_into(self, namespace: str, renamed: dict[str, str]) -> None:
        """Aliases merged into an entity that an import renamed (one the namespace held under
        that name) name it by its new id."""
        await self.db.executemany(
            "UPDATE entities SET merged_into = ? WHERE namespace = ? AND merged_into = ?",
            [[new, namespace, old] for old, new in renamed.items()],
        )


def _value(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS:
        return _encode(value).decode()
    return int(value) if isinstance(value, bool) else value  # flags are integers in both
