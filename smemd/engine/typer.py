"""Dreaming's typing: memories whose type is the heuristic's guess, put to the letter judge.

Nine at a time, asked side by side (the background lane spreads them over the nodes). A sure
answer replaces the guess; an undecided one keeps it. Either way the judgement is logged, so
the memory is not asked again and calibration can re-weigh it later.
"""

from __future__ import annotations

import asyncio
import logging

from smemd.engine.ids import now
from smemd.engine.judge import Judge
from smemd.engine.questions import type_options
from smemd.engine.verdicts import judged
from smemd.store.api import Store
from smemd.store.records import Judged, Memory, MemoryType

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
        answers = await asyncio.gather(*(self._ask(memory) for memory in batch))
        async with self.store.write() as writer:
            for memory, (chosen, record) in zip(batch, answers, strict=True):
                await writer.log_judgement(record)
                if chosen is not None:
                    await writer.set_type(memory.id, chosen, "judge", now())
        return len(batch), sum(chosen is not None for chosen, _ in answers)

    async def _ask(self, memory: Memory) -> tuple[MemoryType | None, Judged]:
        question = type_options(memory.text)
        judgement = await self.judge.decide(question.question)
        chosen = question.memory_type(judgement)
        log.info("type %s %r: %s", memory.id, memory.text[:60], chosen or "undecided")
        return chosen, judged(
            judgement, list(question.types), kind="type", namespace=memory.namespace,
            subject_id=memory.id, text=memory.text, applied=chosen or memory.type,
            fallback=memory.type,
        )  # fmt: skip
