"""SQL for the graph of a namespace: the links that touch a set of documents, memories and
entities, and those nodes themselves, always in batches of ids and within the one namespace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from smemd.store.records import DocumentHead, Entity, Link, Memory
from smemd.store.sql.connection import Connection
from smemd.store.sql.entities import entity_from_row, entity_select
from smemd.store.sql.rows import MEMORY_COLUMNS, batches, to_records

# Ids per statement: each batch is named twice in some statements, beside at most the graph's
# 500 nodes, well under SQLite's limit of bound parameters (32766 since 3.32).


class _LinkTable(NamedTuple):
    select: str  # (from, to, kind) rows of one namespace (its `?` first)
    near: str  # the column looked up by id first
    far: str  # the other end
    order: str
    group: str = ""  # GROUP BY, where one link has several rows


# CROSS JOIN keeps the link table outermost, so a statement starts from the ids it is given
# (each end has an index) rather than scanning the namespace's memories for the join.
_TABLES = (
    _LinkTable(
        "SELECT s.document_id, s.memory_id, 'source' FROM memory_sources s"
        " CROSS JOIN memories m ON m.id = s.memory_id WHERE m.namespace = ?",
        near="s.memory_id", far="s.document_id", order="m.seq",
        group=" GROUP BY s.document_id, s.memory_id, m.seq",  # a source row per chunk
    ),
    _LinkTable(
        "SELECT r.from_id, r.to_id, r.kind FROM relations r"
        " CROSS JOIN memories m ON m.id = r.from_id WHERE m.namespace = ?",
        near="r.from_id", far="r.to_id", order="r.created_at",
    ),
    # Live memories first, newest first: what a cut leaves of an entity's thousands of mentions
    # is what holds now.
    _LinkTable(
        "SELECT l.memory_id, l.entity_id, 'mentions' FROM memory_entities l"
        " CROSS JOIN memories m ON m.id = l.memory_id WHERE m.namespace = ?",
        near="l.memory_id", far="l.entity_id",
        order="(m.is_latest = 1 AND m.forgotten_at IS NULL) DESC, m.seq DESC",
    ),
)  # fmt: skip


def _marks(ids: Sequence[str]) -> str:
    return ",".join("?" * len(ids))


class GraphReads:
    db: Connection

    async def has_namespace(self, name: str) -> bool:
        rows = await self.db.execute_fetchall("SELECT 1 FROM namespaces WHERE name = ?", [name])
        return bool(rows)

    async def newest_document_ids(self, namespace: str, limit: int) -> list[str]:
        rows = await self.db.execute_fetchall(
            "SELECT id FROM documents WHERE namespace = ? ORDER BY created_at DESC, seq DESC"
            " LIMIT ?",
            [namespace, limit],
        )
        return [r[0] for r in rows]

    async def links_of(
        self, namespace: str, ids: Sequence[str], cap: int
    ) -> tuple[list[Link], bool]:
        """Links with an end among `ids` (documents, memories or entities), sources before relations, and
        whether `cap` cut any: each statement reads at most `cap` rows, so a document with
        thousands of memories costs no more than the graph can show."""
        ids = await self._with_merged_names(ids)
        found: list[Link] = []
        cut = False
        for table in _TABLES:
            for batch in batches(ids):
                marks = _marks(batch)
                rows = list(
                    await self.db.execute_fetchall(
                        f"{table.select} AND ({table.near} IN ({marks}) OR {table.far} IN ({marks}))"
                        f"{table.group} ORDER BY {table.order} LIMIT ?",
                        [namespace, *batch, *batch, cap + 1],
                    )
                )
                found += [Link(source=r[0], target=r[1], kind=r[2]) for r in rows[:cap]]
                cut = cut or len(rows) > cap
        return await self._as_entities(_distinct(found)), cut

    async def links_among(self, namespace: str, ids: Sequence[str]) -> list[Link]:
        """The links with both ends among `ids` (a few hundred at most: the graph's nodes)."""
        ids = await self._with_merged_names(ids)
        found: list[Link] = []
        every = _marks(ids)
        for table in _TABLES:
            for batch in batches(ids):
                rows = await self.db.execute_fetchall(
                    f"{table.select} AND {table.near} IN ({_marks(batch)})"
                    f" AND {table.far} IN ({every}){table.group} ORDER BY {table.order}",
                    [namespace, *batch, *ids],
                )
                found += [Link(source=r[0], target=r[1], kind=r[2]) for r in rows]
        return await self._as_entities(found)

    async def memories_in(self, namespace: str, ids: Sequence[str]) -> list[Memory]:
        found: list[Memory] = []
        for batch in batches(ids):
            rows = await self.db.execute_fetchall(
                f"SELECT {MEMORY_COLUMNS} FROM memories"
                f" WHERE namespace = ? AND id IN ({_marks(batch)})",
                [namespace, *batch],
            )
            found += to_records(Memory, list(rows))
        return found

    async def document_heads_in(
        self, namespace: str, ids: Sequence[str], opening: int
    ) -> list[DocumentHead]:
        """The documents among `ids`, with only the first `opening` characters of their content
        (a graph names a document; it never needs all of it)."""
        found: list[DocumentHead] = []
        for batch in batches(ids):
            rows = await self.db.execute_fetchall(
                "SELECT id, title, caller_id, url, substr(content, 1, ?) FROM documents"
                f" WHERE namespace = ? AND id IN ({_marks(batch)})",
                [opening, namespace, *batch],
            )
            found += to_records(DocumentHead, list(rows))
        return found

    async def entity_heads_in(self, namespace: str, ids: Sequence[str]) -> list[Entity]:
        """The entities among `ids` (names merged into another are not), with how many live
        memories name each by any of their names."""
        found: list[Entity] = []
        for batch in batches(ids):
            rows = await self.db.execute_fetchall(
                f"SELECT {entity_select(self.db.dialect)} FROM entities e WHERE e.namespace = ?"
                f" AND e.merged_into IS NULL AND e.id IN ({_marks(batch)})",
                [namespace, *batch],
            )
            found += [entity_from_row(r) for r in rows]
        return found

    async def entity_id(self, namespace: str, entity_id: str) -> str | None:
        """The entity this id names: itself, or the one its name was merged into."""
        rows = await self.db.execute_fetchall(
            "SELECT coalesce(merged_into, id) FROM entities WHERE namespace = ? AND id = ?",
            [namespace, entity_id],
        )
        return next(iter(rows))[0] if rows else None

    async def _with_merged_names(self, ids: Sequence[str]) -> list[str]:
        """`ids` and the rows of names merged into any of them: a link names the row its
        memory used."""
        merged: list[str] = []
        for batch in batches(ids):
            rows = await self.db.execute_fetchall(
                f"SELECT id FROM entities WHERE merged_into IN ({_marks(batch)})", batch
            )
            merged += [r[0] for r in rows]
        return [*ids, *merged]

    async def _as_entities(self, links: list[Link]) -> list[Link]:
        """`mentions` links pointed at the entity a merged name belongs to."""
        named = sorted({link.target for link in links if link.kind == "mentions"})
        owner: dict[str, str] = {}
        for batch in batches(named):
            rows = await self.db.execute_fetchall(
                f"SELECT id, merged_into FROM entities WHERE merged_into IS NOT NULL"
                f" AND id IN ({_marks(batch)})",
                batch,
            )
            owner.update((r[0], r[1]) for r in rows)
        if not owner:
            return links
        return _distinct([
            msgspec.structs.replace(link, target=owner.get(link.target, link.target))
            if link.kind == "mentions" else link
            for link in links
        ])  # fmt: skip


def _distinct(links: list[Link]) -> list[Link]:
    """Once each: a link touching two batches is found twice."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for link in links:
        key = (link.source, link.target, link.kind)
        if key not in seen:
            seen.add(key)
            kept.append(link)
    return kept
