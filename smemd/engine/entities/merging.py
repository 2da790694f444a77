"""Merging entities, as the store is written: a merge, a split, a record that two names are
two, and a judge's alias call settled (by a label, or a new threshold); and the suggestions
read for a namespace. Used by a person's routes (decisions.py), dreaming's judge and
labels alike."""

from __future__ import annotations

import numpy as np

from smemd.engine.entities.suggestions import Named, Suggestion, suggestions
from smemd.engine.ids import new_id, now
from smemd.store.protocol import Reader, Writer
from smemd.store.records import AliasDecision, Judged

# Suggestions look at the namespace's most named entities, each through its newest memories.
SUGGEST_OVER = 2000
CONTEXT_MEMORIES = 20
FACTS = 3  # memories kept per entity for a judge to read
SAME = "same:"  # an alias call's outcome "same:<the entity kept>"


async def candidates(reader: Reader, namespace: str) -> list[Suggestion]:
    """The namespace's alias suggestions, best first, settled pairs left out."""
    entities, _ = await reader.entities(namespace, q=None, kind=None, limit=SUGGEST_OVER, offset=0)
    entities = [e for e in entities if e.memories > 0]
    contexts = await reader.entity_contexts(namespace, [e.id for e in entities], CONTEXT_MEMORIES)
    named = []
    for entity in entities:
        seen = contexts.get(entity.id, [])
        named.append(
            Named(
                id=entity.id, namespace=namespace, names=(entity.name, *entity.aliases), kind=entity.kind,
                memories=entity.memories, memory_ids=frozenset(m for m, _, _ in seen),
                context=_centroid([v for _, _, v in seen]),
                facts=tuple(text for _, text, _ in seen[:FACTS]),
            )
        )  # fmt: skip
    return suggestions(named, await reader.decided_pairs(namespace))


def _centroid(vectors: list[np.ndarray]) -> np.ndarray | None:
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else None


async def merge_in(
    writer: Writer, keep_id: str, alias_id: str, *, by: str,
    probability: float | None = None, judgement_id: str | None = None,
) -> AliasDecision:  # fmt: skip
    """Merge one entity (by its id, not merged itself) into another, recorded."""
    found = {e.id: e for e in await writer.entities_by_id([keep_id])}
    kept = found[keep_id]
    decision = AliasDecision(
        id=new_id("als"), namespace=kept.namespace, entity_id=keep_id, alias_id=alias_id,
        same=True, by="judge" if by == "judge" else "person", probability=probability,
        judgement_id=judgement_id, rows=[], created_at=now(), undone_at=None,
    )  # fmt: skip
    return await writer.merge_entity(decision)


async def record_apart(
    writer: Writer, keep_id: str, alias_id: str, *, by: str,
    probability: float | None = None, judgement_id: str | None = None,
) -> AliasDecision:  # fmt: skip
    """Record that two entities are two (not merged, and not to be suggested again)."""
    found = {e.id: e for e in await writer.entities_by_id([keep_id])}
    decision = AliasDecision(
        id=new_id("als"), namespace=found[keep_id].namespace, entity_id=keep_id,
        alias_id=alias_id, same=False, by="judge" if by == "judge" else "person",
        probability=probability, judgement_id=judgement_id, rows=[], created_at=now(),
        undone_at=None,
    )  # fmt: skip
    await writer.put_alias_decision(decision)
    return decision


async def split_out(writer: Writer, merge: AliasDecision, *, by: str) -> list[str]:
    """Undo a merge, and record that the two are two (so nothing suggests them again)."""
    apart = AliasDecision(
        id=new_id("als"), namespace=merge.namespace, entity_id=merge.entity_id,
        alias_id=merge.alias_id, same=False, by="judge" if by == "judge" else "person",
        probability=None, judgement_id=None, rows=[], created_at=now(), undone_at=None,
    )  # fmt: skip
    return await writer.split_entity(merge, apart)


async def settle_call(writer: Writer, call: Judged, same: bool, *, by: str) -> None:
    """Make a judge's alias call (subject: the alias; option A: `same:<entity kept>`) hold as
    `same` says: a label (by a person) or a new threshold (by the judge) decides it again."""
    keep_id = call.options[0].removeprefix(SAME)
    alias = await writer.entity_row_by_id(call.subject_id)
    kept = await writer.entity_row_by_id(keep_id)
    if alias is None or kept is None:
        return  # deleted since
    merge = await writer.merge_in_force(call.subject_id) if alias[1] == keep_id else None
    if same and alias[1] is None and kept[1] is None:
        await merge_in(writer, keep_id, call.subject_id, by=by, judgement_id=call.id)
    elif not same and merge is not None:
        await split_out(writer, merge, by=by)
