"""Past judge calls redone under a new threshold, where their effect can be undone: a memory's
type and an `extends` link. Reconcile calls made versions, and derives calls inferred memories,
that history keeps; those the new threshold would decide otherwise are only counted, for a
person to review."""

from __future__ import annotations

import msgspec

from smemd.engine.entities.merging import settle_call
from smemd.engine.ids import now
from smemd.engine.judgement.verdicts import NONE, target_of
from smemd.store.protocol import Writer
from smemd.store.records import Judged, JudgeKind, MemoryType

REVIEWED: tuple[JudgeKind, ...] = ("reconcile", "derives")  # counted, never redone


async def reapply(writer: Writer, kind: JudgeKind, threshold: float) -> tuple[int, int]:
    """Redo past calls of a judge under a new threshold: (calls whose effect changed, reconcile
    and derives calls left for review)."""
    changed = review = 0
    labelled = {lab.subject_id for lab in await writer.labels()}
    after = 0
    while calls := await writer.judgements(kind, after=after, limit=500):
        after = calls[-1].seq
        for call in calls:
            if call.proposal is None or call.id in labelled or call.subject_id in labelled:
                continue  # a person's word is not for a threshold to overturn
            should = call.proposal if call.decided_at(threshold) else _undecided(call)
            if should == call.applied:
                continue
            if kind in REVIEWED:
                review += 1
                continue
            await _redo(writer, call, should)
            await writer.set_applied(call.id, should)
            changed += 1
    return changed, review


def _undecided(call: Judged) -> str:
    """What an undecided call leaves: the heuristic's type; no link (the link judge is the
    only one that can make one); the heuristic's reconcile decision; no inference."""
    return NONE if call.kind in ("link", "derives") else call.fallback


async def _redo(writer: Writer, call: Judged, should: str) -> None:
    if call.kind == "alias":
        await settle_call(writer, call, should.startswith("same:"), by="judge")
        return
    memories = {m.id: m for m in await writer.memories_by_id([call.subject_id])}
    memory = memories.get(call.subject_id)
    if memory is None:
        return
    if call.kind == "type":
        if memory.typed_by in (None, "judge"):
            kind = msgspec.convert(should, MemoryType)
            if should == call.proposal:
                await writer.set_type(memory.id, kind, "judge", now())
            else:
                await writer.set_type(memory.id, kind, None, now())
        return
    if (old := target_of(call.applied)) is not None:
        await writer.remove_relation(memory.id, old, "extends")
    if (new := target_of(should)) is not None:
        await writer.link_extends(memory.id, new, call.best, now())
