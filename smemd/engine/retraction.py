"""Retraction: taking back what a document (or a memory) alone taught, and undoing that exactly.

A memory's sources are the documents it was read from and, for an inference, the memories it
`derives` from. Retracting a document withdraws every memory left with no live source, then
every inference left with none, transitively; a memory with another live source stays and
loses only the retracted document's links. A withdrawn version leaves its chain, so the version
it had superseded is latest again. What the retraction changed is recorded, row by row, so
unretract writes back exactly the rows it found; if a later change has touched those rows
since, unretract refuses (409) and names them, rather than guess.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from smemd.engine.ids import new_id, now
from smemd.engine.index.changes import IndexChanges
from smemd.engine.index.per_namespace import Indexes
from smemd.errors import Conflict, NotFound
from smemd.store.effects import Effects, Retraction
from smemd.store.protocol import Store, Writer

SubjectKind = Literal["document", "memory"]


class Outcome(msgspec.Struct, kw_only=True):
    """What a retraction did (or its undoing undid): memory ids withdrawn, reinstated as the
    latest version again, and kept but unlinked from the retracted document."""

    retraction_id: str
    subject_id: str  # smem's id of the document or memory
    withdrawn: list[str]
    reinstated: list[str]
    unlinked: list[str]


class Retractions:
    def __init__(self, store: Store, indexes: Indexes) -> None:
        self.store = store
        self.indexes = indexes

    async def retract(self, namespace: str, kind: SubjectKind, ref: str) -> Outcome:
        t = now()
        async with self.indexes.writing() as (writer, changes):
            subject = await self._subject(writer, namespace, kind, ref)
            if await writer.active_retraction(subject) is not None:
                raise Conflict("already retracted", f"{kind} {ref!r} is retracted; unretract it")
            retraction_id = new_id("ret")
            if kind == "document":
                seeds: list[str] = []
                reached = [m.id for m in await writer.memories_of_document(subject)]
                chunks = [c.seq for c in await writer.chunks_of(subject)]
            else:
                seeds, reached, chunks = [subject], [], []
            withdrawn, unlinked = await writer.unsupported(
                seeds, reached, subject if kind == "document" else None
            )
            roots = {m.root_id for m in await writer.memories_by_id(withdrawn)}
            chains = [m.id for root in roots for m in await writer.chain(root)]
            touched = sorted({*withdrawn, *unlinked, *chains})
            before = await writer.snapshot(touched)
            removed = []
            for memory_id in unlinked:
                removed += await writer.remove_sources(memory_id, subject)
                others = await writer.source_documents(memory_id) - {subject}
                if before.memories[memory_id].column("document_id") == subject and others:
                    await writer.rehome_memory(memory_id, min(others))
            if unlinked:
                await writer.touch(unlinked, t)
            if withdrawn:
                await writer.withdraw(withdrawn, retraction_id, t)
            for root in roots:
                await writer.rechain(root, t)
            effects = Effects(before, await writer.snapshot(touched), removed)
            await writer.insert_retraction(
                Retraction(
                    id=retraction_id, namespace=namespace, subject_kind=kind, subject_id=subject,
                    created_at=t, undone_at=None, effects=effects,
                )
            )  # fmt: skip
            _follow(changes, namespace, effects, chunks, undone=False)
        return _outcome(retraction_id, subject, effects, withdrawn, unlinked)

    async def unretract(self, namespace: str, kind: SubjectKind, ref: str) -> Outcome:
        async with self.indexes.writing() as (writer, changes):
            subject = await self._subject(writer, namespace, kind, ref)
            retraction = await writer.active_retraction(subject)
            if retraction is None:
                raise Conflict("not retracted", f"{kind} {ref!r} is not retracted")
            if changed := await writer.conflicts(retraction.effects):
                holders = await writer.retraction_ids(changed)
                later = sorted({r for r in holders.values() if r and r != retraction.id})
                raise Conflict(
                    "changed since the retraction",
                    f"memories {', '.join(changed[:20])} changed since retraction "
                    f"{retraction.id}"
                    + (f"; unretract {', '.join(later)} first" if later else "")
                    + "; nothing was restored",
                )
            await writer.undo(retraction, now())
            chunks = [c.seq for c in await writer.chunks_of(subject)] if kind == "document" else []
            _follow(changes, namespace, retraction.effects, chunks, undone=True)
        effects = retraction.effects
        withdrawn = [
            i
            for i, m in effects.after.memories.items()
            if m.column("retraction_id") == retraction.id
        ]
        unlinked = sorted({s[0] for s in effects.sources_removed})
        return _outcome(retraction.id, subject, effects, withdrawn, unlinked)

    async def _subject(self, writer: Writer, namespace: str, kind: SubjectKind, ref: str) -> str:
        if kind == "document":
            doc = await writer.document(namespace, ref)
            if doc is None:
                raise NotFound("document not found", f"no document {ref!r} in {namespace!r}")
            if doc.status not in ("done", "failed"):
                # Its memories are not all made yet: those made later would escape the cascade.
                raise Conflict("still being ingested", f"document {ref!r} is {doc.status}")
            return doc.id
        memory = await writer.memory(namespace, ref)
        if memory is None:
            raise NotFound("memory not found", f"no memory {ref!r} in namespace {namespace!r}")
        held = (await writer.retraction_ids([ref]))[ref]
        if held is not None and (await writer.active_retraction(ref)) is None:
            # Withdrawn by another retraction's cascade: that one owns it.
            raise Conflict("withdrawn by a retraction", f"memory {ref!r} was withdrawn by {held}")
        return ref


def _follow(
    changes: IndexChanges, namespace: str, effects: Effects, chunks: list[int], *, undone: bool
) -> None:
    """The in-memory indexes are to see what the rows now say, as after a hard delete: the
    memories' new states, and a retracted document's chunks out of recall (back on undo)."""
    now_images = effects.before if undone else effects.after
    for image in now_images.memories.values():
        changes.set_live(namespace, "memories", image.seq, image.is_live)
    for seq in chunks:
        changes.set_live(namespace, "chunks", seq, undone)


def _outcome(
    retraction_id: str, subject_id: str, effects: Effects, withdrawn: list[str],
    unlinked: list[str],
) -> Outcome:  # fmt: skip
    """Reinstated: versions live after the retraction that were not live before. An undoing
    reports the same lists, of what it has now undone."""
    before, after = effects.before.memories, effects.after.memories
    reinstated = sorted(i for i, image in after.items() if image.is_live and not before[i].is_live)
    return Outcome(
        retraction_id=retraction_id, subject_id=subject_id, withdrawn=sorted(withdrawn), reinstated=reinstated,
        unlinked=sorted(unlinked),
    )  # fmt: skip
