"""An import into a namespace that holds data (`POST /ns/{ns}/import?merge=skip|replace`): what
each batch of records does to the ids and keys the namespace holds already.

A record whose id the namespace holds is skipped (`skip`: the namespace's row stays as it is) or
takes that row's place (`replace`); so is a link (source, relation, mention, label, bucket) whose
key it holds. An entity whose name the namespace holds under another id becomes that entity: its
mentions and alias decisions follow it. What cannot be merged is refused (409), naming the line,
and the transaction leaves the namespace as it was: an id another namespace holds, a custom id
another document of the namespace has, and, once all is written, a memory chain that would have
two latest versions (the namespace's history and the file's went apart there).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from smemd.errors import Conflict
from smemd.protocol.exports import (
    AliasDecisionRecord,
    DocumentRecord,
    EntityRecord,
    MentionRecord,
    MergeRule,
)
from smemd.store.protocol import Reader, Writer
from smemd.store.queries import OnKey
from smemd.store.records import entity_key
from smemd.store.sql.importing import IDENTIFIED

Batch = list[tuple[int, Any]]  # (line, record), one kind


async def refuse_taken(reader: Reader, kind: str, batch: Batch, merging_into: str | None) -> None:
    """409 naming the line of the first record whose id the store holds: in any namespace, or,
    when merging into `merging_into`, in another one."""
    if kind not in IDENTIFIED or not batch:
        return
    taken = await reader.taken_ids(kind, [record.id for _, record in batch])
    for number, record in batch:
        holder = taken.get(record.id)
        if holder is None or holder == merging_into:
            continue
        raise Conflict(
            "ids taken",
            f"line {number}: $.id: the store holds a {kind} {record.id!r} already (ids are"
            " kept on import, so that references and citations hold); nothing was imported",
        )


class Merge:
    """One merge's decisions, batch by batch, inside the import's transaction."""

    def __init__(self, namespace: str, rule: MergeRule) -> None:
        self.namespace = namespace
        self.rule = rule
        self.renamed: dict[str, str] = {}  # the file's entity id -> the namespace's of its name
        self.held: Counter[str] = Counter()

    async def sort(self, writer: Writer, kind: str, batch: Batch) -> list[tuple[Batch, OnKey]]:
        """The batch's records as runs to write, each with what it does to a held key."""
        batch = self._followed(batch)
        if kind == "entity":
            batch = await self._entities_by_name(writer, batch)
        if kind == "document":
            await self._refuse_custom_ids(writer, batch)
        if kind not in IDENTIFIED:
            return [(batch, self.rule)]
        held = await writer.taken_ids(kind, [record.id for _, record in batch])
        fresh = [(n, r) for n, r in batch if r.id not in held]
        known = [(n, r) for n, r in batch if r.id in held]
        self.held[kind] += len(known)
        return [(fresh, "insert"), (known, self.rule)]

    async def finish(self, writer: Writer) -> None:
        """Aliases follow their renamed entities; 409 for a chain with two latest versions."""
        if self.renamed:
            await writer.rename_merged_into(self.namespace, self.renamed)
        split = await writer.split_chains(self.namespace)
        if split:
            root, latest = split[0]
            raise Conflict(
                "histories differ",
                f"the memory chain {root!r} would have {len(latest)} latest versions"
                f" ({', '.join(latest)}): the namespace's history and the file's went apart"
                " there; merge with the other rule, or import into a new namespace. Nothing was"
                " imported",
            )

    def _followed(self, batch: Batch) -> Batch:
        """Mentions and alias decisions name the entities their file's entities became."""
        if not self.renamed:
            return batch
        out: Batch = []
        for number, record in batch:
            if isinstance(record, MentionRecord):
                record = msgspec.structs.replace(
                    record, entity_id=self.renamed.get(record.entity_id, record.entity_id)
                )
            elif isinstance(record, AliasDecisionRecord):
                record = msgspec.structs.replace(
                    record,
                    entity_id=self.renamed.get(record.entity_id, record.entity_id),
                    alias_id=self.renamed.get(record.alias_id, record.alias_id),
                )
            out.append((number, record))
        return out

    async def _entities_by_name(self, writer: Writer, batch: Batch) -> Batch:
        names = await writer.held_names(self.namespace, "entity", [r.name for _, r in batch])
        out: Batch = []
        for number, record in batch:
            assert isinstance(record, EntityRecord)
            held = names.get(entity_key(record.name))
            if held is not None and held != record.id:
                self.renamed[record.id] = held
                record = msgspec.structs.replace(record, id=held)
            out.append((number, record))
        return out

    async def _refuse_custom_ids(self, writer: Writer, batch: Batch) -> None:
        named = [r.caller_id for _, r in batch if r.caller_id is not None]
        held = await writer.held_names(self.namespace, "document", named)
        for number, record in batch:
            assert isinstance(record, DocumentRecord)
            other = held.get(record.caller_id or "")
            if record.caller_id is not None and other is not None and other != record.id:
                raise Conflict(
                    "custom id taken",
                    f"line {number}: $.callerId: {self.namespace!r} holds the custom id"
                    f" {record.caller_id!r} as another document ({other}); nothing was imported",
                )
