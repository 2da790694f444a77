"""SQL for the judge's logged decisions, the labels that grade them, and dreaming's work lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from smemd.store.records import (
    Judged,
    JudgeKind,
    Label,
    LabelKind,
    Memory,
    MemoryType,
    RelationKind,
    TypedBy,
)
from smemd.store.scope import EVERY, Scope
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import MEMORY_COLUMNS, to_records
from smemd.store.vectors import from_blob

_encode = msgspec.json.Encoder().encode
_options = msgspec.json.Decoder(list[str]).decode
_probabilities = msgspec.json.Decoder(list[float]).decode
_JUDGED = ", ".join(Judged.__struct_fields__)
# Memories dreaming may still work on: the latest version, not forgotten.
# (Each condition is its partial index's, word for word, so SQLite uses it.)
_DREAMABLE = "is_latest = 1 AND forgotten_at IS NULL"
# Typed by the heuristic alone, and not yet put to the judge (an undecided judgement keeps the
# heuristic's type: asking again would get the same answer).
_UNTYPED = (
    f"typed_by IS NULL AND {_DREAMABLE} AND NOT EXISTS"
    " (SELECT 1 FROM judgements j WHERE j.subject_id = memories.id AND j.kind = 'type')"
)
_UNLINKED = f"linked_at IS NULL AND {_DREAMABLE}"


def _judged(row: Any) -> Judged:
    values = dict(zip(Judged.__struct_fields__, row, strict=True))
    values["options"] = _options(values["options"])
    values["probabilities"] = _probabilities(values["probabilities"])
    return msgspec.convert(values, Judged)


class JudgementReads:
    db: Connection

    async def judgements(
        self, kind: JudgeKind | None = None, *, namespace: str | None = None, after: int = 0,
        limit: int = 1000, scope: Scope = EVERY,
    ) -> list[Judged]:  # fmt: skip
        """Oldest first, `seq` > after; every kind and namespace in scope unless given."""
        visible, more = scope.where("namespace", self.db.dialect)
        where = f"seq > ? AND {visible}"
        params: list[object] = [after, *more]
        for column, value in (("kind", kind), ("namespace", namespace)):
            if value is not None:
                where += f" AND {column} = ?"
                params.append(value)
        rows = await self.db.execute_fetchall(
            f"SELECT {_JUDGED} FROM judgements WHERE {where} ORDER BY seq LIMIT ?",
            [*params, limit],
        )
        return [_judged(r) for r in rows]

    async def judgement(self, judgement_id: str) -> Judged | None:
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {_JUDGED} FROM judgements WHERE id = ?", [judgement_id]
            )
        )
        return _judged(rows[0]) if rows else None

    async def type_judgement(self, memory_id: str) -> Judged | None:
        """The newest call on a memory's type."""
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {_JUDGED} FROM judgements WHERE subject_id = ? AND kind = 'type'"
                " ORDER BY seq DESC LIMIT 1",
                [memory_id],
            )
        )
        return _judged(rows[0]) if rows else None

    async def judgement_counts(self) -> dict[str, int]:
        rows = await self.db.execute_fetchall("SELECT kind, count(*) FROM judgements GROUP BY kind")
        return {r[0]: r[1] for r in rows}

    async def link_judgement(self, from_id: str, to_id: str) -> Judged | None:
        """The newest judgement that proposed `from_id` extends `to_id` (at dreaming or ingest)."""
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {_JUDGED} FROM judgements WHERE subject_id = ? AND proposal = ?"
                " ORDER BY seq DESC LIMIT 1",
                [from_id, f"extends:{to_id}"],
            )
        )
        return _judged(rows[0]) if rows else None

    async def labels(self) -> list[Label]:
        rows = await self.db.execute_fetchall(
            "SELECT kind, subject_id, value, created_at FROM labels ORDER BY created_at"
        )
        return to_records(Label, list(rows))

    async def label(self, kind: LabelKind, subject_id: str) -> Label | None:
        rows = list(
            await self.db.execute_fetchall(
                "SELECT kind, subject_id, value, created_at FROM labels"
                " WHERE kind = ? AND subject_id = ?",
                [kind, subject_id],
            )
        )
        return to_records(Label, rows)[0] if rows else None

    async def untyped(self, limit: int) -> list[Memory]:
        """Memories whose type is only the heuristic's guess, oldest first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {_UNTYPED} ORDER BY seq LIMIT ?",
            [limit],
        )
        return to_records(Memory, list(rows))

    async def unlinked(self, limit: int) -> list[tuple[Memory, np.ndarray]]:
        """Memories dreaming has not yet looked for links from, oldest first, with vectors."""
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {MEMORY_COLUMNS}, vector FROM memories WHERE {_UNLINKED}"
                " AND vector IS NOT NULL ORDER BY seq LIMIT ?",
                [limit],
            )
        )
        memories = to_records(Memory, [r[:-1] for r in rows])
        return [(m, from_blob(r[-1])) for m, r in zip(memories, rows, strict=True)]

    async def dream_backlog(self, *, typing: bool = True) -> tuple[int, int]:
        """How many memories wait to be typed (0 unless `typing`: without a model nothing
        will type them, and counting them all would cost every status poll), and to be looked
        at for links."""
        untyped = f"(SELECT count(*) FROM memories WHERE {_UNTYPED})" if typing else "0"
        rows = await self.db.execute_fetchall(
            f"SELECT {untyped}, (SELECT count(*) FROM memories WHERE {_UNLINKED})"
        )
        untyped, unlinked = next(iter(rows))
        return int(untyped), int(unlinked)

    async def related(self, a: str, b: str) -> bool:
        """Whether any relation joins two memories, either way."""
        rows = await self.db.execute_fetchall(
            "SELECT 1 FROM relations WHERE (from_id = ? AND to_id = ?) OR (from_id = ? AND to_id = ?)"
            " LIMIT 1",
            [a, b, b, a],
        )
        return bool(list(rows))


class JudgementWrites(JudgementReads):
    async def log_judgement(self, judged: Judged) -> None:
        await self.db.execute(
            "INSERT INTO judgements (id, namespace, kind, subject_id, text, options, probabilities,"
            " proposal, applied, fallback, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                judged.id, judged.namespace, judged.kind, judged.subject_id, judged.text,
                _encode(judged.options).decode(), _encode(judged.probabilities).decode(),
                judged.proposal, judged.applied, judged.fallback, judged.created_at,
            ],
        )  # fmt: skip

    async def set_applied(self, judgement_id: str, applied: str) -> None:
        await self.db.execute(
            "UPDATE judgements SET applied = ? WHERE id = ?", [applied, judgement_id]
        )

    async def put_label(self, label: Label) -> None:
        await self.db.execute(
            "INSERT INTO labels (kind, subject_id, value, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (kind, subject_id) DO UPDATE"
            " SET value = excluded.value, created_at = excluded.created_at",
            [label.kind, label.subject_id, label.value, label.created_at],
        )

    async def set_type(
        self, memory_id: str, memory_type: MemoryType, typed_by: TypedBy | None, now: float
    ) -> None:
        await self.db.execute(
            "UPDATE memories SET type = ?, typed_by = ?, updated_at = ? WHERE id = ?",
            [memory_type, typed_by, now, memory_id],
        )

    async def mark_linked(self, memory_ids: Sequence[str], now: float) -> None:
        await self.db.executemany(
            "UPDATE memories SET linked_at = ? WHERE id = ?", [(now, i) for i in memory_ids]
        )

    async def link_extends(self, from_id: str, to_id: str, score: float, now: float) -> bool:
        """`from_id` extends `to_id`, unless some relation already joins them either way or
        `to_id` is gone; whether the link was made."""
        if await self.related(from_id, to_id):
            return False
        if not list(await self.db.execute_fetchall("SELECT 1 FROM memories WHERE id = ?", [to_id])):
            return False
        await self.db.execute(
            "INSERT INTO relations (namespace, from_id, to_id, kind, score, created_at)"
            " SELECT namespace, ?, ?, 'extends', ?, ? FROM memories WHERE id = ?",
            [from_id, to_id, score, now, to_id],
        )
        return True

    async def remove_relation(self, from_id: str, to_id: str, kind: RelationKind) -> None:
        await self.db.execute(
            "DELETE FROM relations WHERE from_id = ? AND to_id = ? AND kind = ?",
            [from_id, to_id, kind],
        )
