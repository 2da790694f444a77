"""SQL for dreaming's inferences: the memories not yet looked at, the older memories that share
an entity with one, and the marks that say a memory has been looked at."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smemd.store.records import Memory
from smemd.store.sql.connection import Connection
from smemd.store.sql.rows import MEMORY_COLUMNS, columns, to_records
from smemd.store.vectors import from_blob

# Live, latest, stated (not itself inferred), and not yet looked at for inferences. The same
# words as the partial index `memories_uninferred`, so SQLite uses it.
_UNINFERRED = "inferred_at IS NULL AND is_inference = 0 AND is_latest = 1 AND forgotten_at IS NULL"
_SOURCE = "m.is_inference = 0 AND m.is_latest = 1 AND m.forgotten_at IS NULL"


class InferenceReads:
    db: Connection

    async def uninferred(self, limit: int) -> list[tuple[Memory, np.ndarray]]:
        """Memories dreaming has not yet looked at for inferences, oldest first, with vectors."""
        rows = list(
            await self.db.execute_fetchall(
                f"SELECT {MEMORY_COLUMNS}, vector FROM memories WHERE {_UNINFERRED}"
                " AND vector IS NOT NULL ORDER BY seq LIMIT ?",
                [limit],
            )
        )
        memories = to_records(Memory, [r[:-1] for r in rows])
        return [(m, from_blob(r[-1])) for m, r in zip(memories, rows, strict=True)]

    async def inference_backlog(self) -> int:
        rows = await self.db.execute_fetchall(f"SELECT count(*) FROM memories WHERE {_UNINFERRED}")
        return int(next(iter(rows))[0])

    async def sharing_an_entity(self, memory: Memory, limit: int) -> list[Memory]:
        """Older live stated memories of the namespace that name one of the memory's entities,
        newest first: the ones an inference from `memory` may draw on."""
        rows = await self.db.execute_fetchall(
            f"SELECT DISTINCT {columns(Memory, 'm.')} FROM memory_entities mine"
            " JOIN memory_entities other ON other.entity_id = mine.entity_id"
            " AND other.memory_id != mine.memory_id"
            " JOIN memories m ON m.id = other.memory_id"
            f" WHERE mine.memory_id = ? AND m.seq < ? AND m.root_id != ? AND {_SOURCE}"
            " ORDER BY m.seq DESC LIMIT ?",
            [memory.id, memory.seq, memory.root_id, limit],
        )
        return to_records(Memory, list(rows))

    async def names_mentioned(self, memory_ids: Sequence[str]) -> list[str]:
        """The names of the entities the memories mention, each once."""
        if not memory_ids:
            return []
        marks = ",".join("?" * len(memory_ids))
        rows = await self.db.execute_fetchall(
            "SELECT DISTINCT e.name FROM memory_entities l JOIN entities e ON e.id = l.entity_id"
            f" WHERE l.memory_id IN ({marks}) ORDER BY e.name",
            list(memory_ids),
        )
        return [r[0] for r in rows]


class InferenceWrites(InferenceReads):
    async def mark_inferred(self, memory_ids: Sequence[str], now: float) -> None:
        await self.db.executemany(
            "UPDATE memories SET inferred_at = ? WHERE id = ?", [(now, i) for i in memory_ids]
        )
