"""Wire types of entities (`/ns/{ns}/entities…`): listing, profile, alias suggestions, merge,
split and the decisions made."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Reply, Request
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


EntityRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class SuggestionsQuery(Query):
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20


class NameOut(Reply):
    id: str
    name: str


class SuggestionOut(Reply):
    keep: EntityOut  # the one more often named: merging keeps its name
    alias: EntityOut
    name_score: float  # how surely the names alone can name one entity
    context_score: float | None  # cosine of what is said of each (None: nothing to compare)
    score: float


class Suggestions(Reply):
    suggestions: list[SuggestionOut]


class Merge(Request):
    into: EntityRef  # the entity kept: its id, or a name or alias of it
    names: Annotated[list[EntityRef], msgspec.Meta(min_length=1, max_length=20)]


class Split(Request):
    name: EntityRef  # the merged name to make an entity of its own again (or its row's id)


class AliasDecisionOut(Reply):
    id: str
    entity: NameOut  # the entity kept
    alias: NameOut  # the name merged into it, or said to be another
    same: bool
    by: str  # "person" or "judge"
    probability: float | None  # the judge's, that they are one
    judgement_id: str | None  # the judge's call, for a label to grade
    created_at: str
    undone_at: str | None  # a split undid this merge, or a merge overruled this "two"


class Merged(Reply):
    entity: EntityOut  # as it is after the merge
    decisions: list[AliasDecisionOut]


class SplitDone(Reply):
    undone: AliasDecisionOut  # the merge the split undid
    entities: list[EntityOut]  # the two, as they are now


class AliasDecisions(Reply):
    decisions: list[AliasDecisionOut]
    pagination: Pagination
