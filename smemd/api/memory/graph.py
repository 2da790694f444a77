"""The graph route: a bounded neighbourhood of documents, memories and entities, for the console's
Graph."""

from __future__ import annotations

import time

from aiohttp import web

from smemd.api import params
from smemd.api.wire import reply
from smemd.engine.graph import Neighbourhood, Node
from smemd.http.route import Route
from smemd.protocol.entities import EntityKindName as EntityKind
from smemd.protocol.graph import (
    EDGE_KINDS,
    ENTITY_KINDS,
    MAX_LABEL_CHARS,
    MAX_TEXT_CHARS,
    MEMORY_TYPES,
    NODE_KINDS,
    NODE_STATUSES,
    Graph,
    GraphCounts,
    GraphEdge,
    GraphNode,
    GraphQuery,
    NodeStatus,
)
from smemd.store.records import Entity, Memory


async def graph(request: web.Request) -> web.Response:
    ns = params.namespace(request)
    query = params.query(request, GraphQuery)
    engine = params.engine(request)
    found = await engine.graphs.neighbourhood(
        ns, around=query.around, text=query.q, depth=query.depth, limit=query.limit
    )
    return reply(render(found, time.time()))


def render(found: Neighbourhood, now: float) -> Graph:
    nodes = [_node(n, n.id in found.seeds, now) for n in found.nodes]
    edges = [GraphEdge(source=k.source, target=k.target, kind=k.kind) for k in found.links]
    counts = GraphCounts(
        by_kind=dict.fromkeys(NODE_KINDS, 0), by_type=dict.fromkeys(MEMORY_TYPES, 0),
        by_status=dict.fromkeys(NODE_STATUSES, 0), by_edge=dict.fromkeys(EDGE_KINDS, 0),
        by_entity_kind=dict.fromkeys(ENTITY_KINDS, 0),
    )  # fmt: skip
    for node in nodes:
        counts.by_kind[node.kind] += 1
        counts.by_status[node.status] += 1
        if node.type is not None:
            counts.by_type[node.type] += 1
        if node.entity_kind is not None:
            counts.by_entity_kind[node.entity_kind] += 1
    for edge in edges:
        counts.by_edge[edge.kind] += 1
    return Graph(nodes=nodes, edges=edges, truncated=found.truncated, counts=counts)


def _node(node: Node, seed: bool, now: float) -> GraphNode:
    if isinstance(node, Memory):
        status: NodeStatus = (
            "forgotten" if node.is_forgotten(now) else "live" if node.is_latest else "superseded"
        )
        return GraphNode(
            id=node.id, kind="memory", label=_short(node.text), text=node.text[:MAX_TEXT_CHARS],
            type=node.type, status=status, is_latest=node.is_latest,
            document_id=node.document_id, seed=seed,
        )  # fmt: skip
    if isinstance(node, Entity):
        return _entity(node, seed)
    name = node.title or node.caller_id or node.url or node.opening
    text = node.opening if name == node.opening else f"{name}\n\n{node.opening}"
    return GraphNode(
        id=node.id, kind="document", label=_short(name), text=text[:MAX_TEXT_CHARS], seed=seed
    )


def _entity(node: Entity, seed: bool) -> GraphNode:
    kind: EntityKind = next((k for k in ENTITY_KINDS if k == node.kind), "thing")
    also = f"\nalso: {', '.join(node.aliases)}" if node.aliases else ""
    named = f"{node.memories} live {'memory names' if node.memories == 1 else 'memories name'} it"
    return GraphNode(
        id=node.id, kind="entity", label=_short(node.name),
        text=f"{node.name} ({kind}){also}\n{named}"[:MAX_TEXT_CHARS], entity_kind=kind,
        memories=node.memories, seed=seed,
    )  # fmt: skip


def _short(text: str) -> str:
    """One line of at most MAX_LABEL_CHARS, cut at a word where there is one."""
    line = " ".join(text.split())
    if len(line) <= MAX_LABEL_CHARS:
        return line
    cut = line[: MAX_LABEL_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[20:] else cut) + "…"


ROUTES = [
    Route(
        method="GET", path="/ns/{ns}/graph", handler=graph, namespace_from="path",
        query=GraphQuery, reply=Graph,
        summary=(
            "A bounded neighbourhood of documents, memories and entities and the links between"
            " them"
        ),
        description=(
            "Grown breadth first from `around` (a memory, document or entity id) and the top"
            " hits of a search for `q`; with neither, from the newest documents, each with its"
            " memories. At most `limit` nodes, `depth` links from a seed; `truncated` says the"
            " limit left some out (an entity or document with thousands of memories shows the"
            " live ones first, newest first). Entity nodes carry `entityKind` and `memories`,"
            " the live memories naming them. Edges: `source` (document to memory), `mentions`"
            " (memory to an entity it names), and the memory relations `updates` (a newer"
            " version to the one it replaces), `extends`, `derives` and `contradicts`."
        ),
    ),
]  # fmt: skip
