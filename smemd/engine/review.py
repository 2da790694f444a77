"""Contradictions for a person to review, and their resolution.

Two memories about one thing that neither supersedes (reconciliation links the newer to the
other by a `contradicts` relation) both stay latest. While both stand the pair is listed, unless
a person has said both are true. A person resolves a pair with one label (kind `contradiction`,
subject the pair, see `pair_subject`; the latest word stands):

- keep one id: it stands, and the other is forgotten (soft, reason `contradicted by <id>`); the
  restore route undoes that, and then the pair is listed again, with its last label;
- keep `both`: both are true; the pair leaves the list, and both stay.

Resolving a pair whose memories both stand applies the label (a change of mind included: `both`
then one id). Once one of them no longer stands, the same label again is answered as it was
(nothing changes) and any other is a 409.
"""

from __future__ import annotations

import msgspec

from smemd.engine.ids import now
from smemd.engine.index.per_namespace import Indexes
from smemd.errors import BadRequest, Conflict, NotFound
from smemd.store.protocol import EVERY_NAMESPACE, Store, Writer
from smemd.store.records import Contradiction, Label, Memory, pair_subject
from smemd.store.scope import EVERY, Scope

BOTH = "both"


class Resolution(msgspec.Struct):
    memory: Memory  # the memory named first, and the other, as they are after the resolution
    contradicts: Memory
    label: Label
    changed: bool  # False: the same label stood already, and nothing was done


class Review:
    def __init__(self, store: Store, indexes: Indexes) -> None:
        self.store = store
        self.indexes = indexes

    async def contradictions(
        self, namespace: str | None = None, *, page: int = 1, limit: int = 20,
        scope: Scope = EVERY,
    ) -> tuple[list[Contradiction], int]:  # fmt: skip
        """Open contradictions, newest first, in `namespace` or every one in `scope`; and how
        many there are."""
        async with self.store.scan(namespace or EVERY_NAMESPACE) as reader:
            return await reader.open_contradictions(
                now=now(), limit=limit, offset=(page - 1) * limit, namespace=namespace,
                scope=scope,
            )  # fmt: skip

    async def resolve(self, namespace: str, memory_id: str, other_id: str, keep: str) -> Resolution:
        if memory_id == other_id:
            raise BadRequest("not a pair", "$.contradicts: the same id as $.memoryId")
        if keep not in (memory_id, other_id, BOTH):
            raise BadRequest(
                "invalid keep",
                f"$.keep: {keep[:100]!r} is neither of the pair ({memory_id!r}, {other_id!r})"
                f" nor {BOTH!r}",
            )
        subject = pair_subject(memory_id, other_id)
        async with self.indexes.writing() as (writer, changes):
            memory = await _memory(writer, namespace, memory_id)
            other = await _memory(writer, namespace, other_id)
            if await writer.contradiction(memory_id, other_id) is None:
                raise NotFound(
                    "not a contradiction",
                    f"no contradicts relation joins {memory_id!r} and {other_id!r}",
                )
            label = await writer.label("contradiction", subject)
            t = now()
            both_stand = _stands(memory, t) and _stands(other, t)
            if label is not None and label.value == keep and (keep == BOTH or not both_stand):
                return Resolution(memory=memory, contradicts=other, label=label, changed=False)
            if not both_stand:
                raise Conflict("contradiction not open", _why_closed(memory, other, label, t))
            if keep != BOTH:
                forgotten = other if keep == memory_id else memory
                await writer.set_forgotten(forgotten.id, t, f"contradicted by {keep}", t)
                changes.set_live(namespace, "memories", forgotten.seq, False)  # out of recall
            label = Label(kind="contradiction", subject_id=subject, value=keep, created_at=t)
            await writer.put_label(label)
            memory = await _memory(writer, namespace, memory_id)
            other = await _memory(writer, namespace, other_id)
        return Resolution(memory=memory, contradicts=other, label=label, changed=True)


async def _memory(writer: Writer, namespace: str, memory_id: str) -> Memory:
    memory = await writer.memory(namespace, memory_id)
    if memory is None:
        raise NotFound("memory not found", f"no memory {memory_id!r} in namespace {namespace!r}")
    return memory


def _stands(memory: Memory, at: float) -> bool:
    return memory.is_latest and not memory.is_forgotten(at)


def _why_closed(memory: Memory, other: Memory, label: Label | None, at: float) -> str:
    """Why a pair is no longer open, and how to open it again."""
    reasons = []
    for m in (memory, other):
        if m.forgotten_at is not None:
            reasons.append(
                f"{m.id} is forgotten ({m.forget_reason}): restore it to reopen the pair"
            )
        elif m.is_forgotten(at):
            reasons.append(f"{m.id} has expired")
        elif not m.is_latest:
            reasons.append(f"{m.id} is no longer the latest version")
    resolved = f"resolved as keep {label.value!r}; " if label is not None else ""
    return resolved + "; ".join(reasons)
