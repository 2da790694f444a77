"""Records with what their readers show beside them, read in batches: a search's hits with their
documents, chunks and related memories; a document with the memories it gave; memories by id.

Each call is one store read, and its queries are as many whatever the number of records: a
route that renders thirty hits costs what it costs for one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import msgspec

from smemd.engine.memories import RELATED_STEPS, SIBLING_KINDS, Related
from smemd.engine.recall.hybrid import Hit
from smemd.store.protocol import Reader, Store
from smemd.store.records import Chunk, Document, Memory


class Hydrated(msgspec.Struct, kw_only=True):
    """A hit with what its renderers show beside it, each part when it was asked for."""

    hit: Hit
    document: Document | None = None  # a chunk's document (always), a memory's (when asked)
    source: Chunk | None = None  # the chunk a memory was read from
    related: Related | None = None  # a memory's nearby versions and direct links


class Hydration:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def hits(
        self, hits: Sequence[Hit], *, documents: bool = False, sources: bool = False,
        related: int = 0,
    ) -> list[Hydrated]:  # fmt: skip
        """The hits in their order, with memories' `documents`, the chunks they were read from
        (`sources`), and up to `related` of each memory's versions and of its links."""
        memories = list({h.memory.id: h.memory for h in hits if h.memory is not None}.values())
        wanted = sorted({m.document_id for m in memories if m.document_id}) if documents else []
        read_from = sorted({m.chunk_id for m in memories if m.chunk_id}) if sources else []
        relating = memories if related > 0 else []
        found: dict[str, Document] = {}
        pieces: dict[str, Chunk] = {}
        nearby: dict[str, Related] = {}
        if wanted or read_from or relating:
            async with self.store.read() as reader:
                if wanted:
                    found = await reader.documents_by_id(wanted)
                if read_from:  # by id: a memory of a document of 10,000 chunks needs one
                    pieces = await reader.chunks_by_id(read_from)
                if relating:
                    nearby = await _related(reader, relating, related)
        out = []
        for hit in hits:
            m = hit.memory
            if m is None:
                out.append(Hydrated(hit=hit, document=hit.document))
                continue
            out.append(
                Hydrated(
                    hit=hit, document=hit.document or found.get(m.document_id or ""),
                    source=pieces.get(m.chunk_id or ""), related=nearby.get(m.id),
                )
            )  # fmt: skip
        return out

    async def chunks_at(self, positions: Mapping[str, Collection[int]]) -> dict[str, list[Chunk]]:
        """Each document's chunks at these positions, in order, by its id."""
        if not positions:
            return {}
        async with self.store.read() as reader:
            return await reader.chunks_at(positions)

    async def related(self, memory: Memory, limit: int) -> Related:
        """Up to `limit` of the memory's earlier and later versions and of its direct links."""
        async with self.store.read() as reader:
            return (await _related(reader, [memory], limit))[memory.id]

    async def document_of(self, memory: Memory) -> Document | None:
        if memory.document_id is None:
            return None
        async with self.store.read() as reader:
            return await reader.document_by_id(memory.document_id)

    async def memories_of(self, document_id: str) -> list[Memory]:
        """What the document gave: the memories read from it or citing it, oldest first."""
        async with self.store.read() as reader:
            return await reader.memories_of_document(document_id)

    async def memories_with_sources(self, document_id: str) -> list[tuple[Memory, int]]:
        """What the document gave, each with how many documents it is read from."""
        async with self.store.read() as reader:
            derived = await reader.memories_of_document(document_id)
            counts = await reader.source_counts([m.id for m in derived])
        return [(m, counts.get(m.id, 0)) for m in derived]

    async def memory_counts(self, document_ids: Sequence[str]) -> dict[str, int]:
        """How many memories each document gave, by its id."""
        async with self.store.read() as reader:
            counts = await reader.memory_counts_of_documents(document_ids)
        return {d: counts.get(d, 0) for d in document_ids}

    async def memory_counts_by_ref(self, namespace: str, refs: Sequence[str]) -> dict[str, int]:
        """How many memories each document named (by smem's id or the caller's) gave, by the
        name given; names of no document in the namespace are left out."""
        async with self.store.read() as reader:
            found = await reader.documents_by_ref(namespace, refs)
            counts = await reader.memory_counts_of_documents(sorted({d.id for d in found.values()}))
        return {ref: counts.get(doc.id, 0) for ref, doc in found.items()}

    async def memories_in(self, namespace: str, ids: Sequence[str]) -> list[Memory]:
        """The memories of `ids` that exist in the namespace (any version, forgotten or not)."""
        async with self.store.read() as reader:
            return [m for m in await reader.memories_by_id(ids) if m.namespace == namespace]


async def _related(reader: Reader, memories: Sequence[Memory], limit: int) -> dict[str, Related]:
    """Each memory's Related, in four queries however many memories there are."""
    chains = await reader.chains(sorted({m.root_id for m in memories}))
    relations = await reader.relations_by_memory([m.id for m in memories])
    links = {
        m.id: [r for r in relations.get(m.id, []) if r.kind in SIBLING_KINDS] for m in memories
    }
    others = {
        memory_id: {r.to_id if r.from_id == memory_id else r.from_id: r.kind for r in found}
        for memory_id, found in links.items()
    }
    wanted = sorted({other for linked in others.values() for other in linked})
    siblings = await reader.memories_by_id(wanted) if wanted else []
    out = {}
    for memory in memories:
        chain, mine = chains.get(memory.root_id, []), others[memory.id]
        v = memory.version
        earlier = [m for m in chain if v - RELATED_STEPS <= m.version < v]
        later = [m for m in chain if v < m.version <= v + RELATED_STEPS]
        out[memory.id] = Related(
            parents=sorted(earlier, key=lambda m: -m.version)[:limit],
            children=sorted(later, key=lambda m: m.version)[:limit],
            siblings=[(m, mine[m.id]) for m in siblings if m.id in mine][:limit],
            pointed_to={r.to_id for r in links[memory.id] if r.from_id == memory.id},
        )
    return out
