"""SQL for aliases: merging one entity into another, splitting it out again, the decisions on
pairs (who made each, with the judge's probability), and what alias suggestions read.

A merge points the alias's rows (its own and those merged into it before) at the entity kept;
links are not touched, so a split that points those rows back restores exactly the entities
there were, memories stored since the merge included.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from smemd.store.records import AliasDecision
from smemd.store.sql.connection import Connection
from smemd.store.sql.entities import EntityWrites
from smemd.store.sql.rows import list_json
from smemd.store.vectors import from_blob

_DECISION_FIELDS = list(AliasDecision.__struct_fields__)
_rows = msgspec.json.Decoder(list[str]).decode


def _decision(row: Any) -> AliasDecision:
    values = dict(zip(_DECISION_FIELDS, row, strict=True))
    values["rows"] = _rows(values["rows"])
    return msgspec.convert(values, AliasDecision, strict=False)


class AliasReads:
    db: Connection

    async def alias_decisions(
        self, namespace: str, *, limit: int, offset: int
    ) -> tuple[list[AliasDecision], int]:
        """Decisions on pairs, newest first, and how many there are."""
        rows = await self.db.execute_fetchall(
            f"SELECT {', '.join(_DECISION_FIELDS)} FROM alias_decisions WHERE namespace = ?"
            " ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
            [namespace, limit, offset],
        )
        total = await self.db.execute_fetchall(
            "SELECT count(*) FROM alias_decisions WHERE namespace = ?", [namespace]
        )
        return [_decision(r) for r in rows], int(next(iter(total))[0])

    async def alias_decision(self, decision_id: str) -> AliasDecision | None:
        rows = await self.db.execute_fetchall(
            f"SELECT {', '.join(_DECISION_FIELDS)} FROM alias_decisions WHERE id = ?",
            [decision_id],
        )
        return _decision(next(iter(rows))) if rows else None

    async def decided_pairs(self, namespace: str) -> set[frozenset[str]]:
        """Pairs of entities a decision in force has settled: not to be suggested again."""
        rows = await self.db.execute_fetchall(
            "SELECT entity_id, alias_id FROM alias_decisions"
            " WHERE namespace = ? AND undone_at IS NULL",
            [namespace],
        )
        return {frozenset((str(a), str(b))) for a, b in rows}

    async def entity_contexts(
        self, namespace: str, entity_ids: list[str], per_entity: int
    ) -> dict[str, list[tuple[str, str, np.ndarray]]]:
        """For each entity, the id, text and vector of its newest live memories (at most
        `per_entity`), through any of its names."""
        found: dict[str, list[tuple[str, str, np.ndarray]]] = {}
        for start in range(0, len(entity_ids), 500):
            batch = entity_ids[start : start + 500]
            rows = await self.db.execute_fetchall(
                "SELECT canonical, id, text, vector FROM (SELECT coalesce(x.merged_into, x.id)"
                " AS canonical, m.id, m.text, m.vector, row_number() OVER (PARTITION BY"
                " coalesce(x.merged_into, x.id) ORDER BY m.valid_from DESC, m.seq DESC) AS k"
                " FROM entities x JOIN memory_entities l ON l.entity_id = x.id"
                " JOIN memories m ON m.id = l.memory_id WHERE x.namespace = ?"
                f" AND coalesce(x.merged_into, x.id) IN ({','.join('?' * len(batch))})"
                " AND m.is_latest = 1 AND m.forgotten_at IS NULL) WHERE k <= ?",
                [namespace, *batch, per_entity],
            )
            for canonical, memory_id, text, vector in rows:
                found.setdefault(str(canonical), []).append(
                    (str(memory_id), str(text), from_blob(vector))
                )
        return found

    async def newest_entity_rows(self) -> dict[str, int]:
        """Per namespace, the newest entity row's seq: a namespace whose newest is past what
        was looked at has new names to compare."""
        rows = await self.db.execute_fetchall(
            "SELECT namespace, max(seq) FROM entities GROUP BY namespace"
        )
        return {str(ns): int(seq) for ns, seq in rows}

    async def entity_row_by_id(self, entity_id: str) -> tuple[str, str | None] | None:
        """A name's row by id: its id, and the entity it is merged into if it is."""
        return await self._row("id = ?", [entity_id])

    async def _row(self, where: str, params: list[str]) -> tuple[str, str | None] | None:
        rows = await self.db.execute_fetchall(
            f"SELECT id, merged_into FROM entities WHERE {where} LIMIT 1", params
        )
        if not rows:
            return None
        row_id, merged_into = next(iter(rows))
        return str(row_id), None if merged_into is None else str(merged_into)

    async def entity_names(self, ids: set[str]) -> dict[str, str]:
        """The name of each entity row among `ids` (merged or not)."""
        listed = sorted(ids)
        rows = await self.db.execute_fetchall(
            f"SELECT id, name FROM entities WHERE id IN ({','.join('?' * len(listed))})", listed
        )
        return {str(i): str(n) for i, n in rows}


class AliasWrites(EntityWrites, AliasReads):
    async def merge_entity(self, decision: AliasDecision) -> AliasDecision:
        """Point the alias's rows at the entity; `decision.rows` is filled here."""
        rows = await self.db.execute_fetchall(
            "UPDATE entities SET merged_into = ? WHERE namespace = ? AND (id = ? OR merged_into = ?)"
            " RETURNING id",
            [decision.entity_id, decision.namespace, decision.alias_id, decision.alias_id],
        )
        merged = msgspec.structs.replace(decision, rows=sorted(str(r[0]) for r in rows))
        # A merge settles the pair: earlier decisions that they were two are overruled.
        await self._undo_decisions(decision.entity_id, decision.alias_id, decision.created_at)
        await self.put_alias_decision(merged)
        return merged

    async def split_entity(self, merge: AliasDecision, distinct: AliasDecision) -> list[str]:
        """Undo `merge`: its rows point where they did before it; `distinct` records that the
        two are not to be merged again. The rows pointed back, which later merges may have
        moved on (those stay where they are)."""
        back = await self.db.execute_fetchall(
            f"UPDATE entities SET merged_into = CASE WHEN id = ? THEN NULL ELSE ? END"
            f" WHERE merged_into = ? AND id IN ({','.join('?' * len(merge.rows))}) RETURNING id",
            [merge.alias_id, merge.alias_id, merge.entity_id, *merge.rows],
        )
        await self.db.execute(
            "UPDATE alias_decisions SET undone_at = ? WHERE id = ?",
            [distinct.created_at, merge.id],
        )
        await self.put_alias_decision(distinct)
        return sorted(str(r[0]) for r in back)

    async def put_alias_decision(self, decision: AliasDecision) -> None:
        values = msgspec.structs.asdict(decision)
        values["rows"] = list_json(decision.rows)
        await self.db.execute(
            f"INSERT INTO alias_decisions ({', '.join(_DECISION_FIELDS)})"
            f" VALUES ({', '.join(':' + f for f in _DECISION_FIELDS)})",
            values,
        )

    async def merge_in_force(self, row_id: str) -> AliasDecision | None:
        """The merge that made this row an alias, while it stands."""
        rows = await self.db.execute_fetchall(
            f"SELECT {', '.join(_DECISION_FIELDS)} FROM alias_decisions d"
            f" WHERE same = 1 AND undone_at IS NULL AND {self.db.dialect.has_element('d.rows')}"
            " ORDER BY created_at DESC LIMIT 1",
            [row_id],
        )
        return _decision(next(iter(rows))) if rows else None

    async def entity_row(self, namespace: str, id_or_name: str) -> tuple[str, str | None] | None:
        """A name's own row by id or exact name (any case): its id, and the entity it is
        merged into if it is."""
        return await self._row(
            "namespace = ? AND (id = ? OR lower(name) = lower(?)) ORDER BY id != ?",
            [namespace, id_or_name, id_or_name, id_or_name],
        )

    async def _undo_decisions(self, a: str, b: str, at: float) -> None:
        await self.db.execute(
            "UPDATE alias_decisions SET undone_at = ? WHERE undone_at IS NULL AND same = 0"
            " AND ((entity_id = ? AND alias_id = ?) OR (entity_id = ? AND alias_id = ?))",
            [at, a, b, b, a],
        )
