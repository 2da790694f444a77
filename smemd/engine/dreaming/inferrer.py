"""Dreaming's inferences: a new fact that follows from two or more memories taken together.

Each live stated memory is looked at once, beside up to three older memories that name one of
its entities or lie near it (cosine >= 0.55): each pair is so offered once, when the later one
arrives. The model writes one inference that needs two of them at least, or none; one that
repeats a stored memory is dropped; the judge is asked whether it follows. When it does, at a
bar higher than the other judges', the inference is stored: a fact with `isInference`, valid
from the latest of its sources, a `derives` relation to each source scored with the judge's
probability (also in its metadata, `inferenceProbability`). Retraction withdraws it with the
sources it was drawn from (see smemd/store/retractions.py).
"""

from __future__ import annotations

import logging

import msgspec
import numpy as np

from smemd.engine.dreaming.inference_prompt import Chatter, Inference, write_inference
from smemd.engine.entities.mentions import mentions
from smemd.engine.ids import new_id, now
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.questions import DERIVES_OUTCOMES, derives_options
from smemd.engine.judgement.verdicts import NONE, judged
from smemd.fleet.builtin import Embedder
from smemd.store.protocol import Store, Writer
from smemd.store.records import Memory, NewMemory

log = logging.getLogger("smemd.dreaming")

INFER_BATCH = 6  # memories looked at per step; the model is asked about one group at most
COMPANIONS = 3  # older memories beside each
NEAR_AT = 0.55
SAME_AT = 0.92  # an inference this close to a stored memory says nothing new
PROBABILITY = "inferenceProbability"  # the metadata key of the judge's probability


class Inferrer:
    def __init__(
        self, store: Store, indexes: Indexes, embedder: Embedder, model: Chatter, judge: Judge
    ) -> None:
        self.store = store
        self.indexes = indexes
        self.embedder = embedder
        self.model = model
        self.judge = judge

    async def step(self) -> tuple[int, int, int]:
        """Look at memories until one has companions, and ask the model about that group;
        (memories looked at, groups put to the model, inferences stored)."""
        async with self.store.read() as reader:
            batch = await reader.uninferred(INFER_BATCH)
        looked: list[str] = []
        for memory, vector in batch:
            looked.append(memory.id)
            group = await self._companions(memory, vector)
            if group:
                # In the order they were stored, as a person would have learnt them.
                stored = await self._infer(sorted([memory, *group], key=_seq), looked)
                return len(looked), 1, int(stored)
        if looked:
            async with self.store.write() as writer:
                await writer.mark_inferred(looked, now())
        return len(looked), 0, 0

    async def _companions(self, memory: Memory, vector: np.ndarray) -> list[Memory]:
        """Older live stated memories beside `memory`, nearest first: those naming one of its
        entities, then near neighbours."""
        index = (await self.indexes.lookup(memory.namespace)).memories
        hits = await index.nearest(vector, 20)
        async with self.store.read() as reader:
            named = await reader.sharing_an_entity(memory, 20)
            near = await reader.memories_by_seq(
                [seq for seq, cos in hits if seq < memory.seq and cos >= NEAR_AT]
            )
        by_name = {m.seq: m for m in named}
        found = by_name | {
            seq: m for seq, m in near.items()
            if not m.is_inference and m.root_id != memory.root_id
        }  # fmt: skip
        seqs = list(found)
        cosines = dict(zip(seqs, await index.cosines(vector, seqs), strict=True))
        nearest = sorted(seqs, key=lambda seq: (seq not in by_name, -cosines[seq]))
        return [found[seq] for seq in nearest[:COMPANIONS]]

    async def _infer(self, group: list[Memory], looked: list[str]) -> bool:
        """Ask for an inference from the group and store it if the judge agrees; whether one
        was stored."""
        inference = await write_inference(self.model, [m.text for m in group])
        if inference is None:
            await self._mark(looked)
            return False
        sources = [group[i] for i in inference.uses]
        vector = (await self.embedder.embed([inference.text], kind="document"))[0]
        index = (await self.indexes.lookup(group[0].namespace)).memories
        same = [(seq, cos) for seq, cos in await index.nearest(vector, 1) if cos >= SAME_AT]
        if same:
            # Ids and sizes, never the text: a memory's words stay out of the log.
            log.info(
                "inference of %d characters from %s: a stored memory says it (%.3f)",
                len(inference.text), [m.id for m in sources], same[0][1],
            )  # fmt: skip
            await self._mark(looked)
            return False
        question = derives_options(inference.text, [m.text for m in sources])
        judgement = await self.judge.decide(question)
        follows = judgement.choice == "A"
        probability = round(judgement.probabilities["A"], 6)
        memory_id = new_id("mem")
        record = judged(
            judgement, DERIVES_OUTCOMES, kind="derives", namespace=group[0].namespace,
            subject_id=memory_id, text=inference.text,
            applied=DERIVES_OUTCOMES[0] if follows else NONE, fallback=NONE,
        )  # fmt: skip
        log.info(
            "inference %s from %s: p %.3f, %s", memory_id, [m.id for m in sources],
            probability, "judged to follow" if follows else "judged not to follow",
        )  # fmt: skip
        async with self.indexes.writing() as (writer, changes):
            stored = None
            if follows:
                stored = await self._store(
                    writer, memory_id, inference, sources, vector, probability
                )
            if stored is None:
                record = msgspec.structs.replace(record, applied=NONE)
            await writer.log_judgement(record)
            await writer.mark_inferred(looked, now())
            if stored is not None:
                namespace = stored.namespace
                changes.add(namespace, "memories", [stored.seq], vector, [stored.text], [True])
        return stored is not None

    async def _store(
        self, writer: Writer, memory_id: str, inference: Inference, sources: list[Memory],
        vector: np.ndarray, probability: float,
    ) -> Memory | None:  # fmt: skip
        """The inference as a memory with a `derives` link to each source, unless a source
        changed since it was read (a new version, forgotten, retracted)."""
        current = await writer.memories_by_id([m.id for m in sources])
        if len(current) < len(sources) or not all(
            m.is_latest and m.forgotten_at is None for m in current
        ):
            log.info("inference %s: a source changed meanwhile; not stored", memory_id)
            return None
        names = [
            name
            for name in await writer.names_mentioned([m.id for m in sources])
            if name.casefold() in inference.text.casefold()
        ]
        t = now()
        new = NewMemory(
            id=memory_id, namespace=sources[0].namespace, text=inference.text, type="fact",
            root_id=memory_id, valid_from=max(m.valid_from for m in sources), is_inference=True,
            metadata={PROBABILITY: probability}, mentions=mentions(inference.text, names),
        )  # fmt: skip
        memory = await writer.insert_memory(new, vector, t)
        for source in sources:
            await writer.add_relation(memory.id, source.id, "derives", probability, t)
        return memory

    async def _mark(self, looked: list[str]) -> None:
        async with self.store.write() as writer:
            await writer.mark_inferred(looked, now())


def _seq(memory: Memory) -> int:
    return memory.seq
