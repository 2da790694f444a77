"""Wire types of entities (`/ns/{ns}/entities`, `/ns/{ns}/entities/{id}`)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Reply
from smemd.protocol.memory import MemoryOut, Page, Pagination

EntityKindName = Literal["person", "place", "organisation", "thing"]


class EntitiesQuery(Query):
    q: Annotated[str, msgspec.Meta(max_length=200)] | None = None  # in the name or an alias
    kind: EntityKindName | None = None
    page: Page = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20


class EntityOut(Reply):
    id: str
    name: str
    kind: str
    aliases: list[str]
    first_seen: str  # the earliest valid time of a memory naming it
    last_seen: str  # the latest
    memories: int  # live memories naming it (related entities: live memories naming both)


class Entities(Reply):
    entities: list[EntityOut]
    pagination: Pagination


class EntityProfile(Reply):
    entity: EntityOut
    current: list[MemoryOut]  # live memories naming it, newest valid time first
    history: list[MemoryOut]  # superseded versions naming it, with their valid times
    related: list[EntityOut]  # named beside it in live memories, most often first
