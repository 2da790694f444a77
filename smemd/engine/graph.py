"""A namespace's graph, a neighbourhood at a time: documents, memories and entities reached from a
few seeds by their links (sources, versions, relations, mentions), breadth first, never more than
a limit of nodes. An entity is a hub like a document: the links read from it at a step are capped,
so one named by thousands of memories costs no more than the graph can show.
"""

from __future__ import annotations

import msgspec

from smemd.engine.recall.hybrid import Recall
from smemd.engine.recall.query import Query
from smemd.errors import NotFound
from smemd.store.protocol import Reader, Store
from smemd.store.records import DocumentHead, Entity, Link, Memory

SEED_HITS = 10  # a search seeds the graph with its top hits
OPENING_CHARS = 1000  # of a document's content, to name it
# Links read per statement of a step: several times the most nodes a graph shows, so only a hub
# (a document or an entity with thousands of memories) is cut, and then the reply says it is truncated.
LINKS_PER_STEP = 2000

Node = Memory | DocumentHead | Entity


class Neighbourhood(msgspec.Struct, kw_only=True):
    nodes: list[Node]  # in the order reached, seeds first
    links: list[Link]  # those with both ends among the nodes
    seeds: set[str]
    truncated: bool  # the limit left out nodes the links reached


class Graphs:
    def __init__(self, store: Store, recall: Recall) -> None:
        self.store = store
        self.recall = recall

    async def neighbourhood(
        self, namespace: str, *, around: str | None = None, text: str | None = None,
        depth: int = 1, limit: int = 150,
    ) -> Neighbourhood:  # fmt: skip
        """From `around` (a memory, document or entity; NotFound if none) and the hits of a search
        for `text`; with neither, from the newest documents. Each seed enters with its
        neighbours (and a memory with its versions), so a newest document comes with its
        memories rather than after every other document; then `depth - 1` more steps."""
        seeds: list[str] = []
        async with self.store.read() as reader:
            if not await reader.has_namespace(namespace):
                raise NotFound("namespace not found", f"no namespace {namespace!r}")
            if around is not None:
                seeds.append(await _centre(reader, namespace, around))
            elif text is None:
                # One more than fits, so a namespace with more documents reads as truncated.
                seeds = await reader.newest_document_ids(namespace, limit + 1)
        if text is not None:
            hits = await self.recall.search(
                namespace, Query(text=text, limit=SEED_HITS), purpose="graph"
            )
            for hit in hits:
                found = (
                    hit.memory.id if hit.memory else hit.chunk.document_id if hit.chunk else None
                )
                if found is not None and found not in seeds:
                    seeds.append(found)
        async with self.store.read() as reader:
            return await _grow(reader, namespace, seeds, depth, limit)


async def _centre(reader: Reader, namespace: str, ref: str) -> str:
    memory = await reader.memory(namespace, ref)
    if memory is not None:
        return memory.id
    document = await reader.document(namespace, ref)
    if document is not None:
        return document.id
    entity = await reader.entity_id(namespace, ref)
    if entity is None:
        raise NotFound(
            "graph centre not found",
            f"no memory, document or entity {ref[:200]!r} in {namespace!r}",
        )
    return entity


async def _grow(
    reader: Reader, namespace: str, seeds: list[str], depth: int, limit: int
) -> Neighbourhood:
    reached: dict[str, Node] = {}
    truncated = False
    frontier = seeds
    for step in range(depth):
        links, cut = await reader.links_of(namespace, frontier, LINKS_PER_STEP)
        truncated = truncated or cut
        ends: dict[str, list[str]] = {f: [] for f in frontier}
        for link in links:
            for near, far in ((link.source, link.target), (link.target, link.source)):
                if near in ends and far not in reached:
                    ends[near].append(far)
        if step == 0:
            await _add_versions(reader, namespace, seeds, ends)
        wanted = [f for f in frontier if step == 0] + [e for f in frontier for e in ends[f]]
        loaded = await _load(reader, namespace, wanted)
        grown: list[str] = []
        for near in frontier:
            if step == 0 and near in loaded and near not in reached:
                if len(reached) >= limit:
                    truncated = True
                    break
                reached[near] = loaded[near]
            if near not in reached:
                continue
            for far in ends[near]:
                if far in reached or far not in loaded:
                    continue
                if len(reached) >= limit:
                    truncated = True
                    break
                reached[far] = loaded[far]
                grown.append(far)
        frontier = grown
        if not frontier:
            break
    return Neighbourhood(
        nodes=list(reached.values()), links=await reader.links_among(namespace, list(reached)),
        seeds={s for s in seeds if s in reached}, truncated=truncated,
    )  # fmt: skip


async def _add_versions(
    reader: Reader, namespace: str, seeds: list[str], ends: dict[str, list[str]]
) -> None:
    """A seed memory's whole chain as its neighbours, not only the versions next to it."""
    for memory in await reader.memories_in(namespace, seeds):
        if memory.id not in ends:
            continue
        for version in await reader.chain(memory.root_id):
            if version.id != memory.id and version.id not in ends[memory.id]:
                ends[memory.id].append(version.id)


async def _load(reader: Reader, namespace: str, ids: list[str]) -> dict[str, Node]:
    unique = list(dict.fromkeys(ids))
    found: dict[str, Node] = {m.id: m for m in await reader.memories_in(namespace, unique)}
    rest = [i for i in unique if i not in found]
    found.update((d.id, d) for d in await reader.document_heads_in(namespace, rest, OPENING_CHARS))
    rest = [i for i in rest if i not in found]
    found.update((e.id, e) for e in await reader.entity_heads_in(namespace, rest))
    return found
