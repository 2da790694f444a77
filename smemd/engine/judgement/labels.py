"""A person's labels: a memory's type, or ✓/✗ on a judge's call (a link or a decision).

A label is the truth from then on: a type label sets the memory's type; a ✓ on a link makes
it, a ✗ removes it; a ✓ on a type call sets the type it picked, a ✗ puts the heuristic's back;
a ✓ on an alias call merges the two names if it said "the same", a ✗ splits them.
Reconcile calls are graded only: their versions stay as history. Calibration fits on them all.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from smemd.engine.entities.merging import settle_call
from smemd.engine.ids import now
from smemd.errors import BadRequest, NotFound
from smemd.store.protocol import Store, Writer
from smemd.store.records import Judged, JudgeKind, Label, MemoryType
from smemd.store.scope import EVERY, Scope


class Labels:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def judged(
        self, kind: JudgeKind | None, *, namespace: str | None, after: int, limit: int,
        scope: Scope = EVERY,
    ) -> tuple[list[Judged], dict[str, str]]:  # fmt: skip
        """A page of the judge's calls, oldest first after seq `after`, and the labels given,
        by the id of what each labels."""
        async with self.store.read() as reader:
            calls = await reader.judgements(
                kind, namespace=namespace, after=after, limit=limit, scope=scope
            )
            labels = {lab.subject_id: lab.value for lab in await reader.labels()}
        return calls, labels

    async def memory_type(
        self, memory_id: str, memory_type: MemoryType, scope: Scope = EVERY
    ) -> Label:
        """Outside `scope` a memory is as unknown as one that does not exist (so for each)."""
        async with self.store.write() as writer:
            found = await writer.memories_by_id([memory_id])
            if not found or not scope.sees(found[0].namespace):
                raise NotFound(f"no memory {memory_id}")
            await writer.set_type(memory_id, memory_type, "label", now())
            return await _put(writer, "type", memory_id, memory_type)

    async def call(self, judgement_id: str, correct: bool, scope: Scope = EVERY) -> Label:
        async with self.store.write() as writer:
            call = await writer.judgement(judgement_id)
            if call is None or not scope.sees(call.namespace):
                raise NotFound(f"no judgement {judgement_id}")
            return await _grade(writer, call, correct)

    async def link(self, from_id: str, to_id: str, correct: bool, scope: Scope = EVERY) -> Label:
        async with self.store.write() as writer:
            call = await writer.link_judgement(from_id, to_id)
            if call is None or not scope.sees(call.namespace):
                raise NotFound(f"no judge call proposed that {from_id} extends {to_id}")
            return await _grade(writer, call, correct)


async def _grade(writer: Writer, call: Judged, correct: bool) -> Label:
    if call.proposal is None:
        raise BadRequest(
            f"judgement {call.id} picked nothing (its letters held no probability): nothing to grade"
        )
    if call.kind == "alias":
        same = call.proposal.startswith("same:") == correct
        await settle_call(writer, call, same, by="person")
        return await _put(writer, "judgement", call.id, "correct" if correct else "wrong")
    memories = await writer.memories_by_id([call.subject_id])
    if call.kind == "type" and memories:
        value = msgspec.convert(call.proposal if correct else call.fallback, MemoryType)
        await writer.set_type(call.subject_id, value, "label" if correct else None, now())
    elif memories and call.proposal.startswith("extends:"):  # a link, or an extends decision
        target = call.proposal.removeprefix("extends:")
        if correct:
            await writer.link_extends(call.subject_id, target, call.best, now())
        else:
            await writer.remove_relation(call.subject_id, target, "extends")
    return await _put(writer, "judgement", call.id, "correct" if correct else "wrong")


async def _put(
    writer: Writer, kind: Literal["type", "judgement"], subject_id: str, value: str
) -> Label:
    label = Label(kind=kind, subject_id=subject_id, value=value, created_at=now())
    await writer.put_label(label)
    return label
