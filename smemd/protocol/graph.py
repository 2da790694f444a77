"""Wire types of the graph route (`GET /ns/{ns}/graph`): a bounded neighbourhood of documents,
memories and entities and the links between them, for the console to draw.

Kinds are Literal unions so a new kind of node or link is one more word here, and clients that
switch on the kind keep working.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from smemd.protocol import Query, Reply
from smemd.protocol.entities import EntityKindName

NodeKind = Literal["document", "memory", "entity"]
NODE_KINDS: tuple[NodeKind, ...] = ("document", "memory", "entity")
ENTITY_KINDS: tuple[EntityKindName, ...] = ("person", "place", "organisation", "thing")
# `source`: a document a memory was read from (document → memory); `mentions`: an entity a
# memory names (memory → entity); the rest are the memory relations as the store keeps them:
# `updates` points from a newer version to the one it replaces.
EdgeKind = Literal["source", "updates", "extends", "derives", "contradicts", "mentions"]
EDGE_KINDS: tuple[EdgeKind, ...] = (
    "source", "updates", "extends", "derives", "contradicts", "mentions",
)  # fmt: skip
MemoryType = Literal["fact", "preference", "episode"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("fact", "preference", "episode")
# `superseded`: a later version took over; `forgotten`: forgotten or expired. Documents are live.
NodeStatus = Literal["live", "superseded", "forgotten"]
NODE_STATUSES: tuple[NodeStatus, ...] = ("live", "superseded", "forgotten")

MAX_GRAPH_NODES = 500
MAX_LABEL_CHARS = 60
MAX_TEXT_CHARS = 1000


class GraphQuery(Query):
    """Seeds (`around`, a memory, document or entity id, and the hits of `q`; with neither, the newest documents) and how far the
    neighbourhood may grow from them."""

    around: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    q: Annotated[str, msgspec.Meta(min_length=1, max_length=2000, pattern=r"\S")] | None = None
    depth: Annotated[int, msgspec.Meta(ge=1, le=3)] = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_GRAPH_NODES)] = 150


class GraphNode(Reply):
    id: str
    kind: NodeKind
    label: str  # short, to print on the node
    # The memory's text, the document's title and opening, or the entity's name and aliases (at
    # most MAX_TEXT_CHARS).
    text: str
    type: MemoryType | None = None  # memories only
    status: NodeStatus = "live"
    is_latest: bool = True
    document_id: str | None = None  # a memory's first source
    seed: bool = False  # `around`, a hit of `q`, or a newest document: what the graph grew from
    entity_kind: EntityKindName | None = None  # entities only
    memories: int | None = None  # entities only: the live memories naming it


class GraphEdge(Reply):
    source: str
    target: str
    kind: EdgeKind


class GraphCounts(Reply):
    by_kind: dict[NodeKind, int]
    by_type: dict[MemoryType, int]  # memories by type
    by_status: dict[NodeStatus, int]
    by_edge: dict[EdgeKind, int]
    by_entity_kind: dict[EntityKindName, int] = msgspec.field(default_factory=dict)  # entities


class Graph(Reply):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool  # `limit` left out nodes the neighbourhood reached
    counts: GraphCounts
