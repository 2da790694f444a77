"""Dreaming's typing: memories whose type is the heuristic's guess, put to the letter judge.

Nine at a time in one call: the memories are numbered, the model answers one letter each, and
each letter's probabilities are read at its own position. A sure answer replaces the guess; an
undecided one keeps it. Either way the judgement is logged, so the memory is not asked again
and calibration can re-weigh it later.
"""

from __future__ import annotations

import logging

from smemd.engine.ids import now
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.questions import TYPES, chosen_type, type_batch
from smemd.engine.judgement.verdicts import judged
from smemd.store.protocol import Store

log = logging.getLogger("smemd.dreaming")

TYPE_BATCH = 9


class Typer:
    def __init__(self, store: Store, judge: Judge) -> None:
        self.store = store
        self.judge = judge

    async def step(self) -> tuple[int, int]:
        """Type one batch; (memories asked, memories whose type the judge set)."""
        async with self.store.read() as reader:
            batch = await reader.untyped(TYPE_BATCH)
        if not batch:
            return 0, 0
        judgements = await self.judge.decide_batch(type_batch([m.text for m in batch]))
        typed = 0
        async with self.store.write() as writer:
            for memory, judgement in zip(batch, judgements, strict=True):
                chosen = chosen_type(judgement)
                log.info("type %s: %s", memory.id, chosen or "undecided")  # never its text
                record = judged(
                    judgement, list(TYPES), kind="type", namespace=memory.namespace,
                    subject_id=memory.id, text=memory.text, applied=chosen or memory.type,
                    fallback=memory.type,
                )  # fmt: skip
                await writer.log_judgement(record)
                if chosen is not None:
                    await writer.set_type(memory.id, chosen, "judge", now())
                    typed += 1
        return len(batch), typed
