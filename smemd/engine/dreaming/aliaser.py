"""Dreaming's aliases: the judge decides the alias suggestions of namespaces whose entities
changed since it last looked, a few per step.

A pair the judge calls the same, at the alias threshold, is merged (recorded as the judge's,
with its probability); any other answer records the pair as two, so it is not asked again. A
person's label on the call, or a split, overrules it (see judgement/labels.py). Without a model
suggestions wait for a person (`GET /ns/{ns}/entities/suggestions`).
"""

from __future__ import annotations

import logging

import msgspec

from smemd.engine.entities.merging import SAME, candidates, merge_in, record_apart
from smemd.engine.entities.suggestions import Suggestion
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.questions import alias_options
from smemd.engine.judgement.verdicts import judged
from smemd.store.protocol import Store, Writer

log = logging.getLogger("smemd.dreaming")

ALIAS_BATCH = 3  # suggestions judged per step
SEEN = "aliases_seen"  # setting: per namespace, the newest entity row the aliaser has looked at
_seen = msgspec.json.Decoder(dict[str, int]).decode


class Aliaser:
    def __init__(self, store: Store, judge: Judge) -> None:
        self.store = store
        self.judge = judge

    async def step(self) -> tuple[int, int]:
        """Judge a few suggestions of one namespace; (pairs asked about, pairs merged)."""
        async with self.store.read() as reader:
            seen = _seen(await reader.setting(SEEN) or "{}")
            newest = await reader.newest_entity_rows()
            due = sorted(ns for ns, seq in newest.items() if seq > seen.get(ns, 0))
            for namespace in due:
                pending = (await candidates(reader, namespace))[:ALIAS_BATCH]
                if pending:
                    break
                seen[namespace] = newest[namespace]  # nothing to ask: looked at
            else:
                pending = []
        if not pending:
            if due:
                async with self.store.write() as writer:
                    await writer.set_setting(SEEN, msgspec.json.encode(seen).decode())
            return 0, 0
        merged = 0
        for suggestion in pending:
            merged += await self._decide(suggestion)
        return len(pending), merged

    async def _decide(self, suggestion: Suggestion) -> int:
        keep, alias = suggestion.keep, suggestion.alias
        question = alias_options(
            keep.kind if keep.kind != "thing" else alias.kind,
            (keep.names[0], keep.facts), (alias.names[0], alias.facts),
        )  # fmt: skip
        judgement = await self.judge.decide(question)
        same = judgement.choice == "A"
        outcomes = [f"{SAME}{keep.id}", "distinct"]
        async with self.store.write() as writer:
            if not await _both_stand(writer, keep.id, alias.id):
                return 0  # merged, split or deleted while the judge thought: asked again later
            record = judged(
                judgement, outcomes, kind="alias", namespace=keep.namespace, subject_id=alias.id,
                text=question.text, applied=outcomes[0] if same else "distinct",
                fallback="distinct",
            )  # fmt: skip
            await writer.log_judgement(record)
            probability = round(judgement.probabilities.get("A", 0.0), 6)
            if same:
                await merge_in(
                    writer, keep.id, alias.id, by="judge", probability=probability,
                    judgement_id=record.id,
                )  # fmt: skip
            else:
                await record_apart(
                    writer, keep.id, alias.id, by="judge", probability=probability,
                    judgement_id=record.id,
                )  # fmt: skip
        # Ids, not names: a name comes from a document's text.
        log.info("alias %s / %s: %s", keep.id, alias.id, "same" if same else "two")
        return int(same)


async def _both_stand(writer: Writer, *ids: str) -> bool:
    """Each is still an entity of its own (not merged into another, not deleted)."""
    for entity_id in ids:
        found = await writer.entity_row_by_id(entity_id)
        if found is None or found[1] is not None:
            return False
    return True
