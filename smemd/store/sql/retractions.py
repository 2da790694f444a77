"""SQL for retractions: the rows one touches, before and after (smemd.store.effects), so
unretract puts back exactly."""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Sequence

import msgspec

from smemd.store.effects import (
    IMAGE_COLUMNS,
    UNCOMPARED,
    Effects,
    Image,
    Retraction,
    Snapshot,
    SourceRow,
)
from smemd.store.sql.connection import Connection

# Whether chunk `c`'s document is under a retraction in force: its chunks are out of recall
# until it is undone (the partial index on subject_id answers this).
CHUNK_RETRACTED = (
    "EXISTS (SELECT 1 FROM retractions r WHERE r.subject_id = c.document_id"
    " AND r.subject_kind = 'document' AND r.undone_at IS NULL)"
)
# A source row (memory, document, chunk, time) under the namespace of its memory, bound last.
SOURCE_FROM_MEMORY = (
    "(namespace, memory_id, document_id, chunk_id, created_at)"
    " SELECT namespace, ?, ?, ?, ? FROM memories WHERE id = ?"
)

_encode = msgspec.json.Encoder().encode
_decode_effects = msgspec.json.Decoder(Effects).decode


class RetractionReads:
    db: Connection

    async def active_retraction(self, subject_id: str) -> Retraction | None:
        rows = await self.db.execute_fetchall(
            "SELECT id, namespace, subject_kind, subject_id, created_at, undone_at, effects"
            " FROM retractions WHERE subject_id = ? AND undone_at IS NULL",
            [subject_id],
        )
        for row in rows:
            return Retraction(
                id=row[0], namespace=row[1], subject_kind=row[2], subject_id=row[3],
                created_at=row[4], undone_at=row[5], effects=_decode_effects(row[6]),
            )  # fmt: skip
        return None

    async def retracted_documents(self, ids: Collection[str]) -> set[str]:
        """Those of `ids` that are documents under a retraction not undone."""
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        rows = await self.db.execute_fetchall(
            "SELECT subject_id FROM retractions WHERE subject_kind = 'document'"
            f" AND undone_at IS NULL AND subject_id IN ({marks})",
            list(ids),
        )
        return {r[0] for r in rows}

    async def retraction_ids(self, memory_ids: Collection[str]) -> dict[str, str | None]:
        """Each memory's retraction (None when it is not withdrawn)."""
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        rows = await self.db.execute_fetchall(
            f"SELECT id, retraction_id FROM memories WHERE id IN ({marks})", list(memory_ids)
        )
        return {r[0]: r[1] for r in rows}

    async def derivers_of(self, memory_id: str) -> list[str]:
        """The memories inferred from this one (a `derives` link points at its source)."""
        rows = await self.db.execute_fetchall(
            "SELECT from_id FROM relations WHERE to_id = ? AND kind = 'derives' ORDER BY from_id",
            [memory_id],
        )
        return [r[0] for r in rows]

    async def derived_from(self, memory_id: str) -> list[str]:
        rows = await self.db.execute_fetchall(
            "SELECT to_id FROM relations WHERE from_id = ? AND kind = 'derives'", [memory_id]
        )
        return [r[0] for r in rows]

    async def source_documents(self, memory_id: str) -> set[str]:
        """Every document a memory was read from: its source links and its own document."""
        rows = await self.db.execute_fetchall(
            "SELECT document_id FROM memory_sources WHERE memory_id = ? UNION"
            " SELECT document_id FROM memories WHERE id = ? AND document_id IS NOT NULL",
            [memory_id, memory_id],
        )
        return {r[0] for r in rows}

    async def unsupported(
        self, seeds: Sequence[str], reached: Sequence[str], document: str | None, *,
        past_withdrawn: bool = False,
    ) -> tuple[list[str], list[str]]:  # fmt: skip
        """(gone, kept): `seeds`, and every memory left without a live source once `document`
        and the memories gone are dead, walked from `reached` and through `derives`; `kept`, the
        memories of `reached` that keep one. A memory an earlier retraction withdrew is that
        one's and is left out, unless `past_withdrawn` (a hard delete takes it too)."""
        gone: dict[str, None] = dict.fromkeys(seeds)
        theirs: set[str] = set()
        queue = deque(reached)
        for seed in seeds:
            queue.extend(await self.derivers_of(seed))
        while queue:
            memory_id = queue.popleft()
            if memory_id in gone or memory_id in theirs:
                continue
            if not past_withdrawn and (await self.retraction_ids([memory_id])).get(memory_id):
                theirs.add(memory_id)
                continue
            if await self._has_live_source(memory_id, document, gone):
                continue
            gone[memory_id] = None
            queue.extend(await self.derivers_of(memory_id))
        kept = [m for m in dict.fromkeys(reached) if m not in gone and m not in theirs]
        return list(gone), kept

    async def _has_live_source(
        self, memory_id: str, document: str | None, gone: Collection[str]
    ) -> bool:
        """A document other than `document` and not retracted, or a parent not gone nor
        withdrawn."""
        documents = {d for d in await self.source_documents(memory_id) if d != document}
        if documents - await self.retracted_documents(documents):
            return True
        parents = [p for p in await self.derived_from(memory_id) if p not in gone]
        held = await self.retraction_ids(parents)
        return any(p in held and held[p] is None for p in parents)

    async def snapshot(self, ids: Collection[str]) -> Snapshot:
        """The rows of `ids` and the `updates` links touching them, as a retraction saves them."""
        if not ids:
            return Snapshot({}, [])
        marks = ",".join("?" * len(ids))
        rows = await self.db.execute_fetchall(
            f"SELECT id, seq, {', '.join(IMAGE_COLUMNS)} FROM memories WHERE id IN ({marks})",
            list(ids),
        )
        links = await self.db.execute_fetchall(
            "SELECT from_id, to_id, score, created_at FROM relations WHERE kind = 'updates'"
            f" AND (from_id IN ({marks}) OR to_id IN ({marks})) ORDER BY from_id, to_id",
            [*ids, *ids],
        )
        return Snapshot(
            {r[0]: Image(r[1], list(r[2:])) for r in rows},
            [(r[0], r[1], r[2], r[3]) for r in links],
        )


class RetractionWrites(RetractionReads):
    async def remove_sources(self, memory_id: str, document_id: str) -> list[SourceRow]:
        """Unlink a memory from a document; the links removed."""
        rows = await self.db.execute_fetchall(
            "SELECT memory_id, document_id, chunk_id, created_at FROM memory_sources"
            " WHERE memory_id = ? AND document_id = ?",
            [memory_id, document_id],
        )
        await self.db.execute(
            "DELETE FROM memory_sources WHERE memory_id = ? AND document_id = ?",
            [memory_id, document_id],
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def touch(self, memory_ids: Sequence[str], now: float) -> None:
        marks = ",".join("?" * len(memory_ids))
        await self.db.execute(
            f"UPDATE memories SET updated_at = ? WHERE id IN ({marks})", [now, *memory_ids]
        )

    async def withdraw(self, memory_ids: Sequence[str], retraction_id: str, now: float) -> None:
        marks = ",".join("?" * len(memory_ids))
        await self.db.execute(
            # Not latest either: its chain closes over it, and the one it superseded is latest.
            "UPDATE memories SET forgotten_at = ?, forget_reason = 'retracted', retraction_id = ?,"
            f" is_latest = 0, updated_at = ? WHERE id IN ({marks})",
            [now, retraction_id, now, *memory_ids],
        )

    async def insert_retraction(self, retraction: Retraction) -> None:
        await self.db.execute(
            "INSERT INTO retractions (id, namespace, subject_kind, subject_id, created_at,"
            " undone_at, effects) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                retraction.id, retraction.namespace, retraction.subject_kind,
                retraction.subject_id, retraction.created_at, None, _encode(retraction.effects).decode(),
            ],
        )  # fmt: skip

    async def conflicts(self, effects: Effects) -> list[str]:
        """The memories whose rows (or chain links) changed since the retraction left them."""
        now = await self.snapshot(list(effects.after.memories))
        changed = [
            memory_id
            for memory_id, image in effects.after.memories.items()
            if (current := now.memories.get(memory_id)) is None
            or current.values[:UNCOMPARED] != image.values[:UNCOMPARED]
            or current.values[UNCOMPARED + 1 :] != image.values[UNCOMPARED + 1 :]
        ]
        if not changed and sorted(now.links) != sorted(effects.after.links):
            changed = sorted({link[0] for link in {*now.links} ^ {*effects.after.links}})
        return changed

    async def undo(self, retraction: Retraction, now: float) -> None:
        """Write the before-images back (the caller checked `conflicts`) and close the record."""
        effects = retraction.effects
        sets = ", ".join(f"{c} = ?" for c in IMAGE_COLUMNS)
        for memory_id, image in effects.before.memories.items():
            await self.db.execute(
                f"UPDATE memories SET {sets} WHERE id = ?", [*image.values, memory_id]
            )
        for from_id, to_id, _, _ in effects.after.links:
            await self.db.execute(
                "DELETE FROM relations WHERE from_id = ? AND to_id = ? AND kind = 'updates'",
                [from_id, to_id],
            )
        await self.db.executemany(
            # An upsert, not OR REPLACE, as in add_relation: the `connections` triggers.
            "INSERT INTO relations (namespace, from_id, to_id, kind, score, created_at)"
            " SELECT namespace, ?, ?, 'updates', ?, ? FROM memories WHERE id = ?"
            " ON CONFLICT (namespace, from_id, to_id, kind)"
            " DO UPDATE SET score = excluded.score, created_at = excluded.created_at",
            [(*link, link[0]) for link in effects.before.links],
        )
        await self.db.executemany(
            f"INSERT INTO memory_sources {SOURCE_FROM_MEMORY} ON CONFLICT DO NOTHING",
            [(*source, source[0]) for source in effects.sources_removed],
        )
        await self.db.execute(
            "UPDATE retractions SET undone_at = ? WHERE id = ?", [now, retraction.id]
        )
