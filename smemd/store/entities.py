"""SQL for entities: linking a new memory to the entities it mentions, and reading them back
with their memories and the entities mentioned beside them."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import aiosqlite
import msgspec

from smemd.store.records import Entity, EntityKind, Memory, Mention, NewMemory
from smemd.store.rows import columns, to_records

_ENTITY_FIELDS = [f for f in Entity.__struct_fields__ if f != "memories"]
_ENTITY_COLUMNS = ", ".join(f"e.{f}" for f in _ENTITY_FIELDS)
_aliases = msgspec.json.Decoder(list[str]).decode
# The memories that name an entity; params: namespace, then the entity's id or name (any case).
NAMES_ENTITY = (
    "m.id IN (SELECT l.memory_id FROM memory_entities l JOIN entities e ON e.id = l.entity_id"
    " WHERE e.namespace = ? AND (e.id = ? OR lower(e.name) = lower(?)))"
)
# The live memories linking an entity, counted per entity row.
_LIVE_COUNT = (
    "(SELECT count(*) FROM memory_entities l JOIN memories m ON m.id = l.memory_id"
    " WHERE l.entity_id = e.id AND m.is_latest = 1 AND m.forgotten_at IS NULL)"
)


def _entity(row: Any) -> Entity:
    values = dict(zip([*_ENTITY_FIELDS, "memories"], row, strict=True))
    values["aliases"] = _aliases(values["aliases"])
    return msgspec.convert(values, Entity, strict=False)


class EntityReads:
    db: aiosqlite.Connection

    async def entities(
        self, namespace: str, *, q: str | None, kind: EntityKind | None, limit: int, offset: int
    ) -> tuple[list[Entity], int]:
        """A page of the namespace's entities, most mentioned first, and how many match."""
        where, params = "e.namespace = ?", [namespace]
        if q:
            # A name or an alias containing `q`, any case (instr: no LIKE wildcards to escape).
            where += (
                " AND (instr(lower(e.name), lower(?)) > 0 OR instr(lower(e.aliases), lower(?)) > 0)"
            )
            params += [q, q]
        if kind is not None:
            where += " AND e.kind = ?"
            params.append(kind)
        rows = await self.db.execute_fetchall(
            f"SELECT {_ENTITY_COLUMNS}, {_LIVE_COUNT} AS n FROM entities e WHERE {where}"
            " ORDER BY n DESC, lower(e.name) LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        total = await self.db.execute_fetchall(
            f"SELECT count(*) FROM entities e WHERE {where}", params
        )
        return [_entity(r) for r in rows], int(next(iter(total))[0])

    async def entity(self, namespace: str, entity_id: str) -> Entity | None:
        rows = await self.db.execute_fetchall(
            f"SELECT {_ENTITY_COLUMNS}, {_LIVE_COUNT} FROM entities e"
            " WHERE e.namespace = ? AND e.id = ?",
            [namespace, entity_id],
        )
        return _entity(next(iter(rows))) if rows else None

    async def memories_of_entity(self, entity_id: str, limit: int) -> list[Memory]:
        """Every version that mentions the entity, newest valid time first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {columns(Memory, 'm.')} FROM memory_entities l"
            " JOIN memories m ON m.id = l.memory_id WHERE l.entity_id = ?"
            " ORDER BY m.valid_from DESC, m.seq DESC LIMIT ?",
            [entity_id, limit],
        )
        return to_records(Memory, list(rows))

    async def co_mentioned(self, entity_id: str, limit: int) -> list[Entity]:
        """Entities named in the same live memories, with how many (`memories`), most first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {_ENTITY_COLUMNS}, count(*) AS n FROM memory_entities mine"
            " JOIN memories m ON m.id = mine.memory_id AND m.is_latest = 1"
            " AND m.forgotten_at IS NULL"
            " JOIN memory_entities other ON other.memory_id = mine.memory_id"
            " AND other.entity_id != mine.entity_id"
            " JOIN entities e ON e.id = other.entity_id"
            " WHERE mine.entity_id = ? GROUP BY e.id ORDER BY n DESC, lower(e.name) LIMIT ?",
            [entity_id, limit],
        )
        return [_entity(r) for r in rows]


class EntityWrites(EntityReads):
    async def link_mentions(self, new: NewMemory, valid_from: float, now: float) -> None:
        """The memory's entities, made where new and widened to its valid time where known."""
        for mention in _distinct(new.mentions):
            rows = await self.db.execute_fetchall(
                "INSERT INTO entities (id, namespace, name, kind, first_seen, last_seen, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, lower(name)) DO UPDATE SET"
                " first_seen = min(first_seen, excluded.first_seen),"
                " last_seen = max(last_seen, excluded.last_seen) RETURNING id",
                [
                    _new_entity_id(), new.namespace, mention.name, mention.kind,
                    valid_from, valid_from, now,
                ],
            )  # fmt: skip
            await self.db.execute(
                "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                [new.id, next(iter(rows))[0]],
            )


def _distinct(mentions: Sequence[Mention]) -> list[Mention]:
    seen: dict[str, Mention] = {}
    for mention in mentions:
        name = " ".join(mention.name.split())
        if name and name.lower() not in seen:
            seen[name.lower()] = Mention(name=name, kind=mention.kind)
    return list(seen.values())


def _new_entity_id() -> str:
    # Made here (the engine's `ids` sits above the store), shaped like the engine's ids.
    return f"ent_{secrets.token_hex(8)}"
