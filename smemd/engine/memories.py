"""Memories after ingest: read, relate, version by hand, forget and restore."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from smemd.engine.entities.mentions import mentions
from smemd.engine.filters import Filter
from smemd.engine.ids import new_id, now
from smemd.engine.index.changes import IndexChanges
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.recall.hybrid import Recall
from smemd.engine.recall.query import Query
from smemd.errors import Conflict, NotFound
from smemd.fleet.builtin import Embedder
from smemd.store import deadline
from smemd.store.protocol import Store
from smemd.store.queries import Listing, MemorySelection, Sort
from smemd.store.records import Memory, MemoryStatus, MemoryType, NewMemory, RelationKind

MEMORY_SORTS: dict[str, Sort] = {"createdAt": "created", "updatedAt": "updated"}
RELATED_STEPS = 3
# The links `related` shows beside a memory's versions (`updates` makes the versions).
SIBLING_KINDS: tuple[RelationKind, ...] = ("extends", "derives", "contradicts")


class Related(msgspec.Struct):
    parents: list[Memory]  # earlier versions, nearest first
    children: list[Memory]  # later versions, nearest first
    # Direct links (extends, derives, contradicts either way), with the kind.
    siblings: list[tuple[Memory, RelationKind]]
    # The siblings this memory's links point to ("this extends that"); the rest point to it.
    pointed_to: set[str] = msgspec.field(default_factory=set)


class Forgotten(msgspec.Struct):
    count: int
    errors: list[tuple[str, str]]
    matches: list[Memory]
    scores: dict[str, float] = msgspec.field(default_factory=dict)  # by id, when a query chose


class Memories:
    def __init__(self, store: Store, indexes: Indexes, recall: Recall, embedder: Embedder) -> None:
        self.store = store
        self.indexes = indexes
        self.recall = recall
        self.embedder = embedder

    async def get(self, namespace: str, memory_id: str) -> Memory:
        async with self.store.read() as reader:
            memory = await reader.memory(namespace, memory_id)
        if memory is None:
            raise _not_found(namespace, memory_id)
        return memory

    async def by_text(self, namespace: str, text: str) -> Memory:
        """The newest latest version whose text is exactly `text`, preferring one not forgotten."""
        async with self.store.scan(namespace) as reader:
            found = await reader.memory_by_text(namespace, text)
        if found is None:
            raise NotFound("memory not found", f"no memory with that text in {namespace!r}")
        return found

    async def history(self, namespace: str, memory_id: str) -> list[Memory]:
        """Every version of the memory's chain, oldest first."""
        memory = await self.get(namespace, memory_id)
        async with self.store.read() as reader:
            return await reader.chain(memory.root_id)

    async def list_memories(
        self, namespace: str, *, page: int, limit: int, sort: str, order: str,
        filter: Filter | None = None, include_forgotten: bool = False, history: bool = False,
        type: MemoryType | None = None, status: MemoryStatus | None = None,
        document: str | None = None, entity: str | None = None,
    ) -> tuple[list[Memory], int]:  # fmt: skip
        """A page of memories; `status`, when given, stands in for `history` and
        `include_forgotten`; `document` keeps those it is a source of, `entity` those naming it."""
        selection = MemorySelection(
            now=now(), status=status, history=history, include_forgotten=include_forgotten,
            document=document, entity=entity, type=type, filter=filter,
        )  # fmt: skip
        listing = Listing(
            sort=MEMORY_SORTS.get(sort, "created"), descending=order == "desc", limit=limit,
            offset=(page - 1) * limit,
        )  # fmt: skip
        async with self.store.scan(namespace) as reader:
            return await reader.page(namespace, selection, listing)

    async def forget(
        self, namespace: str, ids: list[str], reason: str = "forgotten by request"
    ) -> Forgotten:
        """Soft: the memory stays for audit and leaves recall; `restore` brings it back."""
        result = Forgotten(count=0, errors=[], matches=[])
        async with self.indexes.writing() as (writer, changes):
            for memory_id in ids:
                memory = await writer.memory(namespace, memory_id)
                if memory is None:
                    result.errors.append((memory_id, "not found"))
                    continue
                if memory.forgotten_at is None:
                    await writer.set_forgotten(memory.id, now(), reason, now())
                result.count += 1
                result.matches.append(memory)
            hide(changes, namespace, result.matches)
        return result

    async def forget_matching(
        self, namespace: str, query: str, *, dry_run: bool, threshold: float = 0.5, limit: int = 20,
        reason: str | None = None,
    ) -> Forgotten:  # fmt: skip
        """Forget what a natural-language query selects; a dry run only shows the selection."""
        hits = await self.recall.search(
            namespace, Query(text=query, mode="memories", limit=limit, threshold=threshold),
            purpose="forget",
        )  # fmt: skip
        selected = [h.memory for h in hits if h.memory is not None]
        scores = {h.memory.id: h.similarity for h in hits if h.memory is not None}
        if dry_run:
            return Forgotten(count=0, errors=[], matches=selected, scores=scores)
        forgotten = await self.forget(
            namespace, [m.id for m in selected], reason=reason or f"forgotten by query: {query}"
        )
        forgotten.scores = scores
        return forgotten

    async def restore(self, namespace: str, memory_id: str) -> Memory:
        async with self.indexes.writing() as (writer, changes):
            memory = await writer.memory(namespace, memory_id)
            if memory is None:
                raise _not_found(namespace, memory_id)
            if held := (await writer.retraction_ids([memory.id]))[memory.id]:
                raise Conflict(
                    "withdrawn by a retraction", f"memory {memory_id!r}: unretract {held} instead"
                )
            await writer.set_forgotten(memory.id, None, None, now())
            restored = await writer.memory(namespace, memory_id)
            assert restored is not None
            changes.set_live(namespace, "memories", restored.seq, restored.is_latest)
        return restored

    async def change(
        self, namespace: str, memory_id: str, *, text: str | None = None,
        expires_at: float | None = None, metadata: dict[str, Any] | None = None,
    ) -> Memory:  # fmt: skip
        """New text (a new version of the latest only, else 409), an expiry, or both: one commit.
        The new version keeps the old one's metadata unless `metadata` replaces it."""
        if text is None:
            return await self._expire(namespace, memory_id, expires_at)
        vector = (await deadline.waiting(self.embedder.embed([text], kind="document")))[0]
        async with self.indexes.writing() as (writer, changes):
            old = await writer.memory(namespace, memory_id)
            if old is None:
                raise _not_found(namespace, memory_id)
            if not old.is_latest:
                raise Conflict(
                    "not the latest version",
                    f"update the chain's latest version, not {memory_id!r}",
                )
            t = now()
            new = await writer.insert_memory(
                NewMemory(
                    id=new_id("mem"), namespace=namespace, text=text, type=old.type,
                    root_id=old.root_id, document_id=old.document_id, chunk_id=old.chunk_id,
                    event_at=old.event_at, expires_at=expires_at, is_static=old.is_static,
                    metadata=old.metadata if metadata is None else metadata,
                    entities=old.entities,
                    mentions=mentions(text, old.entities),
                    # A correction holds from now, and never before what it corrects.
                    valid_from=max(t, old.valid_from),
                ),  # typed_by unset: a new text re-opens its type, for dreaming to ask again
                vector, t,
            )  # fmt: skip
            chain = await writer.rechain(old.root_id, t)
            new = next(m for m in await writer.memories_by_id([new.id]))
            changes.add(namespace, "memories", [new.seq], vector, [new.text], [False])
            for version in chain:
                live = version.is_latest and version.forgotten_at is None
                changes.set_live(namespace, "memories", version.seq, live)
        return new

    async def _expire(self, namespace: str, memory_id: str, at: float | None) -> Memory:
        """Set when the memory leaves recall by itself (checked at query time; restore cannot undo it)."""
        async with self.store.write() as writer:
            memory = await writer.memory(namespace, memory_id)
            if memory is None:
                raise _not_found(namespace, memory_id)
            if at is not None:
                await writer.set_expiry(memory.id, at, now())
                memory = await writer.memory(namespace, memory_id)
        assert memory is not None
        return memory

    async def mark(
        self, namespace: str, marks: dict[str, tuple[bool, dict[str, Any]]]
    ) -> list[Memory]:
        """Set `is_static` and metadata of memories by id (one commit); the memories after."""
        async with self.store.write() as writer:
            for memory_id, (is_static, metadata) in marks.items():
                if await writer.memory(namespace, memory_id) is None:
                    raise _not_found(namespace, memory_id)
                await writer.set_marks(memory_id, is_static, metadata)
            return await writer.memories_by_id(list(marks))


def hide(changes: IndexChanges, namespace: str, memories: Sequence[Memory]) -> None:
    """Out of recall's live rows: memories the write forgot."""
    for memory in memories:
        changes.set_live(namespace, "memories", memory.seq, False)


def _not_found(namespace: str, memory_id: str) -> NotFound:
    return NotFound("memory not found", f"no memory {memory_id!r} in namespace {namespace!r}")
