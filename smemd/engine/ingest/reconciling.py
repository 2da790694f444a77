"""The reconciling phase: each candidate against its nearest memories, all in one commit.

The decision is the heuristic's (`reconcile_by_rules.decide`), or the LLM judge's when the fleet has a
model (`reconcile_by_model`); this module gathers the neighbours (`plan`, before the write) and
applies the decisions as versions, sources and relations (`apply`, in the worker's commit that
ends the job), recording what the index must take.
"""

from __future__ import annotations

import logging

import msgspec
import numpy as np

from smemd.engine.entities.mentions import mentions
from smemd.engine.ids import new_id, now
from smemd.engine.index.changes import IndexChanges
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.reconcile_by_model import judged_decision
from smemd.engine.judgement.reconcile_by_rules import Decision, Neighbour, decide
from smemd.store.protocol import Store, Writer
from smemd.store.records import Candidate, Document, Job, Judged, Memory, NewMemory

log = logging.getLogger("smemd.engine")

NEIGHBOURS = 5
# Seqs per batch of one read: well under the parameters SQLite binds in one statement.
ROWS_PER_READ = 500


class Plan(msgspec.Struct):
    candidate: Candidate
    vector: np.ndarray
    decision: Decision
    judged: Judged | None  # the judge's call behind the decision, if it was asked
    said_at: float | None  # when its chunk's message was sent, if its chat log says
    memory_id: str | None = None  # the new memory, unless a duplicate


class Reconciler:
    def __init__(self, store: Store, indexes: Indexes, judge: Judge | None = None) -> None:
        self.store = store
        self.indexes = indexes
        self.judge = judge

    async def plan(self, job: Job, doc: Document) -> list[Plan]:
        """Each candidate's decision against its neighbours, the job's earlier ones among them."""
        async with self.store.read() as reader:
            items = await reader.candidates(job.id)
            # When each candidate was said, if its chat log stated it (`valid_from`).
            chunks = await reader.chunks_by_id(sorted({c.chunk_id for c, _ in items}))
            said = {chunk_id: chunk.said_at for chunk_id, chunk in chunks.items()}
            # A revision is reconciled against what the document said before, wherever those
            # memories rank among the namespace's: its facts are updated, not duplicated.
            before = (
                [m for m in await reader.memories_of_document(doc.id) if m.is_latest]
                if job.revision > 1
                else []
            )
        index = (await self.indexes.lookup(doc.namespace)).memories
        own = [m.seq for m in before]
        searched = [
            (
                await index.nearest(vector, NEIGHBOURS),
                list(zip(own, await index.cosines(vector, own), strict=True)),
            )
            for _, vector in items
        ]
        rows = await self._rows([seq for hits, own_hits in searched for seq, _ in hits + own_hits])
        plans: list[Plan] = []
        for (candidate, vector), (hits, own_hits) in zip(items, searched, strict=True):
            neighbours = _neighbours(hits, own_hits, plans, vector, rows)
            judged: Judged | None = None
            if self.judge is not None:
                decision, judged = await judged_decision(
                    self.judge, doc.namespace, candidate.text, neighbours
                )
            else:
                decision = decide(candidate.text, neighbours)
            log.debug(
                "reconcile %r: %s %s (%s)",
                candidate.text,
                decision.kind,
                decision.target,
                decision.reason,
            )
            plans.append(Plan(candidate, vector, decision, judged, said.get(candidate.chunk_id)))
        return plans

    async def apply(
        self, writer: Writer, changes: IndexChanges, job: Job, doc: Document, plans: list[Plan]
    ) -> None:
        """Inside the commit that ends the job: the plans as memories, relations and sources."""
        added: list[Memory] = []
        live: dict[int, bool] = {}  # what a chain's re-ordering changed, for the index
        for plan in plans:
            memory = await self._apply(writer, doc, plan, live)
            if memory is not None:
                added.append(memory)
        await writer.delete_candidates(job.id)
        fresh = {m.seq for m in added}
        for seq, is_live in live.items():
            if seq not in fresh:
                changes.set_live(doc.namespace, "memories", seq, is_live)
        if added:
            vectors = {p.memory_id: p.vector for p in plans if p.memory_id}
            changes.add(
                doc.namespace, "memories", [m.seq for m in added],
                np.stack([vectors[m.id] for m in added]), [m.text for m in added],
                [live.get(m.seq, True) for m in added],
            )  # fmt: skip

    async def _rows(self, seqs: list[int]) -> dict[int, Memory]:
        """Every candidate's neighbours in one read, in batches SQLite can bind."""
        wanted = sorted(set(seqs))
        rows: dict[int, Memory] = {}
        async with self.store.read() as reader:
            for start in range(0, len(wanted), ROWS_PER_READ):
                rows |= await reader.memories_by_seq(wanted[start : start + ROWS_PER_READ])
        return rows

    async def _apply(
        self, writer: Writer, doc: Document, plan: Plan, live: dict[int, bool]
    ) -> Memory | None:
        candidate, decision = plan.candidate, plan.decision
        if decision.kind == "duplicate" and decision.target is not None:
            await writer.add_source(decision.target, doc.id, candidate.chunk_id, now())
            await self._log(writer, plan, decision.target)
            return None
        t = now()
        memory_id = new_id("mem")
        new = NewMemory(
            id=memory_id, namespace=doc.namespace, text=candidate.text, type=candidate.type,
            root_id=memory_id, document_id=doc.id, chunk_id=candidate.chunk_id,
            event_at=candidate.event_at, metadata=dict(doc.metadata), typed_by=candidate.typed_by,
            entities=candidate.entities, valid_from=valid_from(candidate, doc, plan.said_at, t),
            mentions=mentions(candidate.text, candidate.entities),
        )  # fmt: skip
        target = None
        if decision.kind in ("updates", "extends", "contradicts") and decision.target is not None:
            targets = await writer.memories_by_id([decision.target])
            target = targets[0] if targets else None
        kind = decision.kind
        if kind == "updates" and target is not None and not target.is_latest:
            target = None  # replaced meanwhile (earlier in this job): a fact of its own
        if kind == "updates" and target is not None and target.valid_from == new.valid_from:
            # The same moment with another value: neither can supersede the other.
            kind = "contradicts"
        if kind == "updates" and target is not None:
            new = msgspec.structs.replace(new, root_id=target.root_id)
        memory = await writer.insert_memory(new, plan.vector, t)
        if kind == "updates" and target is not None:
            # Versions are ordered by valid time: a fact about an earlier time than the latest
            # takes its place in the past, whatever order the documents came in.
            for version in await writer.rechain(target.root_id, t):
                live[version.seq] = version.is_latest and version.forgotten_at is None
        elif kind in ("extends", "contradicts") and target is not None:
            await writer.add_relation(memory.id, target.id, kind, decision.score, t)
        plan.memory_id = memory.id
        await self._log(writer, plan, memory.id)
        return memory

    @staticmethod
    async def _log(writer: Writer, plan: Plan, subject_id: str) -> None:
        """The judgement goes in with what it decided, in the same commit."""
        if plan.judged is not None:
            await writer.log_judgement(msgspec.structs.replace(plan.judged, subject_id=subject_id))


def valid_from(
    candidate: Candidate, doc: Document, said_at: float | None, stored_at: float
) -> float:
    """When the fact began to hold: its event date, else when it was said (its message's time,
    `said_at`, else its document's date), else now.

    Never after it was said: "The dentist appointment is on 5 January." holds from when it was
    said, and a later "It was moved to 3 January." must come after it.
    """
    said = next((t for t in (said_at, doc.content_date) if t is not None), stored_at)
    return said if candidate.event_at is None else min(candidate.event_at, said)


def _neighbours(
    hits: list[tuple[int, float]], own: list[tuple[int, float]], plans: list[Plan],
    vector: np.ndarray, rows: dict[int, Memory],
) -> list[Neighbour]:  # fmt: skip
    """The nearest memories, this job's own new ones among them; `own`, what the document
    said before a revision, always has its nearest one in."""
    found = {
        seq: Neighbour(rows[seq].id, rows[seq].text, cos)
        for seq, cos in hits + own
        if seq in rows  # deleted since the index was read
    }
    # Memories this job is about to add are neighbours too: a document may restate itself.
    fresh = [
        Neighbour(p.memory_id, p.candidate.text, float(p.vector @ vector))
        for p in plans
        if p.memory_id is not None
    ]
    nearest = sorted([*found.values(), *fresh], key=lambda n: -n.cosine)[:NEIGHBOURS]
    mine = [hit for hit in own if hit[0] in found]
    if mine:
        closest = found[max(mine, key=lambda hit: hit[1])[0]]
        if closest not in nearest:
            nearest = [*nearest[: NEIGHBOURS - 1], closest]
    return nearest
