"""Dreaming's links: does a memory add detail to one of its near neighbours (`extends`)?

Neighbours at cosine >= 0.80, at most three, not already related and not versions of the same
memory, go to a conservative judge (its bar is higher than the other judges'). Without a model
the heuristic links only when the memory says everything the neighbour says and more.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from smemd.engine.ids import now
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.index.words import STOPWORDS, tokens
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.questions import LINK_CANDIDATES, link_options
from smemd.engine.judgement.verdicts import NONE, judged, outcome_key, target_of
from smemd.store.protocol import Store
from smemd.store.records import Judged, Memory

log = logging.getLogger("smemd.dreaming")

LINK_AT = 0.80
LINK_BATCH = 6


def extends_by_words(text: str, other: str) -> bool:
    """Every content word of `other` is in `text`, and `text` has more ("with honey"): a
    rephrasing changes words, and fails the first test."""
    mine = {t for t in tokens(text) if t not in STOPWORDS}
    theirs = {t for t in tokens(other) if t not in STOPWORDS}
    return bool(theirs) and theirs < mine


class Linker:
    def __init__(self, store: Store, indexes: Indexes, judge: Judge | None) -> None:
        self.store = store
        self.indexes = indexes
        self.judge = judge

    async def step(self) -> tuple[int, int]:
        """Look at one batch; (memories looked at, links made)."""
        async with self.store.read() as reader:
            batch = await reader.unlinked(LINK_BATCH)
        if not batch:
            return 0, 0
        found = await asyncio.gather(*(self._look(m, v) for m, v in batch))
        made = 0
        async with self.store.write() as writer:
            for (memory, _), (key, score, record) in zip(batch, found, strict=True):
                if record is not None:
                    await writer.log_judgement(record)
                # A link made since the question was asked (the other way round) stands.
                if (target := target_of(key)) is not None:
                    made += await writer.link_extends(memory.id, target, score, now())
            await writer.mark_linked([memory.id for memory, _ in batch], now())
        return len(batch), made

    async def _look(self, memory: Memory, vector: np.ndarray) -> tuple[str, float, Judged | None]:
        """The outcome key for the memory, the link's score, and the judgement if one was asked."""
        near = await self._candidates(memory, vector)
        if not near:
            return NONE, 0.0, None
        heuristic = next((c for c, _ in near if extends_by_words(memory.text, c.text)), None)
        fallback = outcome_key("extends", heuristic.id) if heuristic else NONE
        if self.judge is None:
            return fallback, 1.0 if heuristic else 0.0, None
        question = link_options(memory.text, [c.text for c, _ in near])
        judgement = await self.judge.decide(question.question)
        chosen = question.target(judgement)
        keys = [
            NONE if i is None else outcome_key("extends", near[i][0].id) for i in question.targets
        ]
        applied = NONE if chosen is None else keys[chosen]
        score = judgement.probabilities[judgement.choice] if judgement.choice else 0.0
        log.info("link %s: %s", memory.id, applied)  # never its text
        record = judged(
            judgement, keys, kind="link", namespace=memory.namespace, subject_id=memory.id,
            text=memory.text, applied=applied, fallback=fallback,
        )  # fmt: skip
        return applied, score, record

    async def _candidates(self, memory: Memory, vector: np.ndarray) -> list[tuple[Memory, float]]:
        index = (await self.indexes.lookup(memory.namespace)).memories
        hits = [
            (seq, cos)
            for seq, cos in await index.nearest(vector, LINK_CANDIDATES + 3)
            if seq != memory.seq and cos >= LINK_AT
        ]
        async with self.store.read() as reader:
            rows = await reader.memories_by_seq([seq for seq, _ in hits])
            near = []
            for seq, cos in hits:
                other = rows.get(seq)
                if other is None or other.root_id == memory.root_id:
                    continue
                if not await reader.related(memory.id, other.id):
                    near.append((other, cos))
        return near[:LINK_CANDIDATES]
