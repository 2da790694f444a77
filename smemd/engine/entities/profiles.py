"""Entities as a person reads them: the namespace's list, and one entity's story — what holds of
it now, what held before (superseded versions, with their valid times), and who or what is
named beside it."""

from __future__ import annotations

from dataclasses import dataclass

from smemd.engine.ids import now
from smemd.errors import NotFound
from smemd.store.protocol import Store
from smemd.store.records import Entity, EntityKind, Memory

# An entity's story is read whole up to this many versions; more is a listing's job, not a
# profile's.
STORY_LIMIT = 200
RELATED_LIMIT = 20


@dataclass(frozen=True)
class Profile:
    entity: Entity
    current: list[Memory]  # live memories mentioning it, newest valid time first
    history: list[Memory]  # superseded versions, newest valid time first
    related: list[Entity]  # co-mentioned in its live memories; `memories` counts them


class EntityProfiles:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def listing(
        self, namespace: str, *, q: str | None, kind: EntityKind | None, page: int, limit: int
    ) -> tuple[list[Entity], int]:
        async with self.store.read() as reader:
            return await reader.entities(
                namespace, q=q, kind=kind, limit=limit, offset=(page - 1) * limit
            )

    async def profile(self, namespace: str, entity_id: str) -> Profile:
        async with self.store.read() as reader:
            entity = await reader.entity(namespace, entity_id)
            if entity is None:
                raise NotFound(
                    "entity not found", f"no entity {entity_id!r} in namespace {namespace!r}"
                )
            story = await reader.memories_of_entity(entity.id, STORY_LIMIT)
            related = await reader.co_mentioned(entity.id, RELATED_LIMIT)
        t = now()
        return Profile(
            entity=entity,
            current=[m for m in story if m.is_latest and not m.is_forgotten(t)],
            history=[m for m in story if not m.is_latest and not m.is_forgotten(t)],
            related=related,
        )
