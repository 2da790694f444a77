"""Alias decisions: one entity under several names. Suggested from names and what is said of each
(suggestions.py), decided by a person (merge, split, here) or by the judge while dreaming
(dreaming/aliaser.py), all through merging.py, and every decision recorded: who made it, with
what probability. A merge is undone by a split; a split keeps the two apart from then on, and a
label on a judge's call does the same as a person's merge or split."""

from __future__ import annotations

from dataclasses import dataclass

from smemd.engine.entities.merging import candidates, merge_in, split_out
from smemd.engine.entities.suggestions import Suggestion
from smemd.errors import BadRequest, Conflict, NotFound
from smemd.store.protocol import Reader, Store
from smemd.store.records import AliasDecision, Entity


@dataclass(frozen=True)
class Split:
    undone: AliasDecision  # the merge the split undid
    entities: list[Entity]  # the entity kept, then the one split out, as they are now


class AliasDecisions:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def suggest(self, namespace: str, limit: int) -> list[Suggestion]:
        async with self.store.read() as reader:
            return (await candidates(reader, namespace))[:limit]

    async def merge(self, namespace: str, keep: str, names: list[str]) -> list[AliasDecision]:
        """A person's merge of each of `names` into `keep` (ids or names, any case)."""
        async with self.store.write() as writer:
            kept = await _entity(writer, namespace, keep)
            made = []
            for name in dict.fromkeys(names):
                alias = await _entity(writer, namespace, name)
                if alias.id == kept.id:
                    raise Conflict(
                        "already one entity", f"{name!r} already names {kept.name!r} ({kept.id})"
                    )
                made.append(await merge_in(writer, kept.id, alias.id, by="person"))
            return made

    async def split(self, namespace: str, name: str) -> Split:
        """A person's split of a merged name (id or name) from the entity it was merged into."""
        async with self.store.write() as writer:
            found = await writer.entity_row(namespace, name)
            if found is None:
                raise NotFound("entity not found", f"no name {name!r} in namespace {namespace!r}")
            row_id, merged_into = found
            merge = await writer.merge_in_force(row_id) if merged_into else None
            if merge is None:
                raise Conflict(
                    "not merged", f"{name!r} is an entity of its own: there is nothing to split"
                )
            await split_out(writer, merge, by="person")
            two = {e.id: e for e in await writer.entities_by_id([merge.entity_id, merge.alias_id])}
            return Split(undone=merge, entities=[two[merge.entity_id], two[merge.alias_id]])

    async def names(self, ids: set[str]) -> dict[str, str]:
        async with self.store.read() as reader:
            return await reader.entity_names(ids)

    async def decisions(
        self, namespace: str, *, page: int, limit: int
    ) -> tuple[list[AliasDecision], int, dict[str, str]]:
        """A page of decisions, newest first, how many, and the names of the rows they name."""
        async with self.store.read() as reader:
            found, total = await reader.alias_decisions(
                namespace, limit=limit, offset=(page - 1) * limit
            )
            names = await reader.entity_names({i for d in found for i in (d.entity_id, d.alias_id)})
        return found, total, names


async def _entity(reader: Reader, namespace: str, ref: str) -> Entity:
    if not ref.strip():
        raise BadRequest("empty entity name", "name each entity by its id or a name of it")
    found = await reader.entity(namespace, ref)
    if found is None:
        raise NotFound("entity not found", f"no entity {ref[:200]!r} in namespace {namespace!r}")
    return found
