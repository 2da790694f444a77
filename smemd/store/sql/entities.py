"""SQL for entities: linking a new memory to the names it mentions, and reading entities back
with their memories and the entities mentioned beside them.

A link names the row of the name its memory used. A merged name's row points at the entity it
was merged into (`merged_into`), so an entity is its own row and every row merged into it: its
aliases, times and memories are the group's (see entity_merges.py for merge and split).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.store.records import Entity, EntityKind, Memory, Mention, NewMemory
from smemd.store.sql.connection import Connection, Dialect
from smemd.store.sql.rows import columns, to_records

_names = msgspec.json.Decoder(list[str]).decode
# The rows of the group of the entity `e` (a canonical row), for use as `g` in a subquery.
_IN_GROUP = "(g.id = e.id OR g.merged_into = e.id)"
# The entity a row counts for: itself, or the one it was merged into.
CANONICAL = "coalesce(x.merged_into, x.id)"
# The memories that name an entity, through any of its names; params: namespace, then the
# entity's id, or a name or alias of it (any case).
NAMES_ENTITY = (
    "m.id IN (SELECT l.memory_id FROM entities x JOIN entities g ON g.namespace = x.namespace"
    f" AND (g.id = {CANONICAL} OR g.merged_into = {CANONICAL})"
    " JOIN memory_entities l ON l.entity_id = g.id"
    " WHERE x.namespace = ? AND (x.id = ? OR lower(x.name) = lower(?)))"
)


# An entity as read (rows `e`), in Entity's field order: its row, with the group's times, aliases (the
# names merged into it) and live memories.
def entity_select(dialect: Dialect) -> str:
    return (
        "e.id, e.namespace, e.name, e.kind,"
        f" (SELECT min(g.first_seen) FROM entities g WHERE {_IN_GROUP}),"
        f" (SELECT max(g.last_seen) FROM entities g WHERE {_IN_GROUP}), e.created_at,"
        f" (SELECT {dialect.name_list('a.name')} FROM entities a WHERE a.merged_into = e.id),"
        " (SELECT count(DISTINCT l.memory_id) FROM entities g"
        " JOIN memory_entities l ON l.entity_id = g.id JOIN memories m ON m.id = l.memory_id"
        f" WHERE {_IN_GROUP} AND m.is_latest = 1 AND m.forgotten_at IS NULL)"
    )


def entity_from_row(row: Any) -> Entity:
    values = dict(zip(Entity.__struct_fields__, row, strict=True))
    values["aliases"] = sorted(_names(values["aliases"]), key=str.lower)
    return msgspec.convert(values, Entity, strict=False)


class EntityReads:
    db: Connection

    async def entities(
        self, namespace: str, *, q: str | None, kind: EntityKind | None, limit: int, offset: int
    ) -> tuple[list[Entity], int]:
        """A page of the namespace's entities (merged names are aliases, not entities), most
        mentioned first, and how many match."""
        where, params = "e.namespace = ? AND e.merged_into IS NULL", [namespace]
        if q:
            # A name or an alias containing `q`, any case (instr: no LIKE wildcards to escape).
            where += (
                f" AND EXISTS (SELECT 1 FROM entities g WHERE {_IN_GROUP}"
                " AND instr(lower(g.name), lower(?)) > 0)"
            )
            params.append(q)
        if kind is not None:
            where += " AND e.kind = ?"
            params.append(kind)
        rows = await self.db.execute_fetchall(
            f"SELECT {entity_select(self.db.dialect)} AS n FROM entities e WHERE {where}"
            " ORDER BY n DESC, lower(e.name) LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        total = await self.db.execute_fetchall(
            f"SELECT count(*) FROM entities e WHERE {where}", params
        )
        return [entity_from_row(r) for r in rows], int(next(iter(total))[0])

    async def entity(self, namespace: str, id_or_name: str) -> Entity | None:
        """The entity with this id, or named so by its name or an alias (any case); asked by a
        merged name's id, the entity it was merged into."""
        rows = await self.db.execute_fetchall(
            f"SELECT {entity_select(self.db.dialect)} FROM entities e WHERE e.id = (SELECT {CANONICAL} FROM entities x"
            " WHERE x.namespace = ? AND (x.id = ? OR lower(x.name) = lower(?))"
            " ORDER BY x.id != ? LIMIT 1)",
            [namespace, id_or_name, id_or_name, id_or_name],
        )
        return entity_from_row(next(iter(rows))) if rows else None

    async def entities_by_id(self, ids: Sequence[str]) -> list[Entity]:
        marks = ",".join("?" * len(ids))
        rows = await self.db.execute_fetchall(
            f"SELECT {entity_select(self.db.dialect)} FROM entities e WHERE e.id IN ({marks})",
            list(ids),
        )
        return [entity_from_row(r) for r in rows]

    async def memories_of_entity(self, entity_id: str, limit: int) -> list[Memory]:
        """Every version that mentions the entity by any of its names, newest valid time first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {columns(Memory, 'm.')} FROM memories m WHERE m.id IN"
            " (SELECT l.memory_id FROM entities g JOIN memory_entities l ON l.entity_id = g.id"
            " WHERE g.id = ? OR g.merged_into = ?)"
            " ORDER BY m.valid_from DESC, m.seq DESC LIMIT ?",
            [entity_id, entity_id, limit],
        )
        return to_records(Memory, list(rows))

    async def co_mentioned(self, entity_id: str, limit: int) -> list[Entity]:
        """Entities named in the same live memories, with how many (`memories`), most first."""
        rows = await self.db.execute_fetchall(
            f"SELECT {CANONICAL} AS other, count(DISTINCT mine.memory_id) AS n"
            " FROM entities g JOIN memory_entities mine ON mine.entity_id = g.id"
            " JOIN memories m ON m.id = mine.memory_id AND m.is_latest = 1"
            " AND m.forgotten_at IS NULL"
            " JOIN memory_entities l ON l.memory_id = mine.memory_id"
            " JOIN entities x ON x.id = l.entity_id"
            f" WHERE (g.id = ? OR g.merged_into = ?) AND {CANONICAL} != ?"
            " GROUP BY other ORDER BY n DESC LIMIT ?",
            [entity_id, entity_id, entity_id, limit],
        )
        counts = {str(r[0]): int(r[1]) for r in rows}
        found = {e.id: e for e in await self.entities_by_id(list(counts))}
        return sorted(
            (
                msgspec.structs.replace(found[i], memories=n)
                for i, n in counts.items()
                if i in found
            ),
            key=lambda e: (-e.memories, e.name.lower()),
        )


class EntityWrites(EntityReads):
    async def link_mentions(self, new: NewMemory, valid_from: float, now: float) -> None:
        """The memory's names, each a row made where new and widened to its valid time."""
        least, greatest = self.db.dialect.least, self.db.dialect.greatest
        for mention in _distinct(new.mentions):
            rows = await self.db.execute_fetchall(
                "INSERT INTO entities (id, namespace, name, kind, first_seen, last_seen, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, lower(name)) DO UPDATE SET"
                f" first_seen = {least('entities.first_seen', 'excluded.first_seen')},"
                f" last_seen = {greatest('entities.last_seen', 'excluded.last_seen')} RETURNING id",
                [
                    _new_entity_id(), new.namespace, mention.name, mention.kind,
                    valid_from, valid_from, now,
                ],
            )  # fmt: skip
            await self.db.execute(
                "INSERT INTO memory_entities (namespace, memory_id, entity_id) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [new.namespace, new.id, next(iter(rows))[0]],
            )

    async def drop_unnamed_entities(self, row_ids: Sequence[str]) -> None:
        """Of the entities these name rows belong to, those no memory names any more by any of
        their names (after a hard delete), with the decisions about them; an alias of an entity
        still named stays an alias."""
        if not row_ids:
            return
        marks = ",".join("?" * len(row_ids))
        rows = await self.db.execute_fetchall(
            f"SELECT DISTINCT {CANONICAL} FROM entities x WHERE x.id IN ({marks})"
            f" AND NOT EXISTS (SELECT 1 FROM entities g JOIN memory_entities l"
            f" ON l.entity_id = g.id WHERE g.id = {CANONICAL} OR g.merged_into = {CANONICAL})",
            list(row_ids),
        )
        gone = [str(r[0]) for r in rows]
        if not gone:
            return
        marks = ",".join("?" * len(gone))
        group = f"SELECT id FROM entities WHERE id IN ({marks}) OR merged_into IN ({marks})"
        await self.db.execute(
            f"DELETE FROM alias_decisions WHERE entity_id IN ({group}) OR alias_id IN ({group})",
            [*gone, *gone, *gone, *gone],
        )
        await self.db.execute(
            f"DELETE FROM entities WHERE id IN ({marks}) OR merged_into IN ({marks})",
            [*gone, *gone],
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
