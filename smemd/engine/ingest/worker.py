"""The durable ingest worker: each job advances phase by phase, each phase one commit.

queued -> [fetching ->] chunking -> embedding -> extracting -> reconciling -> done; a document
given as a URL is fetched first. A kill -9 anywhere loses nothing: on restart a job resumes at its
last committed phase, and each phase's work is idempotent (the fetched text replaces the content,
chunks are replaced, candidates upserted, reconciliation commits together with done).

The worker alone moves a job from phase to phase (`_commit`); each commit checks that the job
still belongs to its document's current revision and hands the next phase the document it read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence

import msgspec
import numpy as np

from smemd.config import IngestConfig
from smemd.engine.ids import new_id, now
from smemd.engine.index.changes import IndexChanges
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest import chat_logs, chunking, turn_contexts
from smemd.engine.ingest.chunking import TooManyChunks
from smemd.engine.ingest.extracting import extract_candidates
from smemd.engine.ingest.fetching import Fetcher, Fetches, FetchFailed
from smemd.engine.ingest.readers import Readers
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.quiet import QuietClock
from smemd.errors import SmemError, is_storage_fault
from smemd.fleet.builtin import Embedder
from smemd.fleet.llama import ChatModel
from smemd.store.protocol import Store, Writer
from smemd.store.records import Chunk, Document, Job, Phase
from smemd.store.vectors import stack
from smemd.tallies import Tally, Timings

log = logging.getLogger("smemd.engine")

MAX_ATTEMPTS = 3
# A job is leased to the daemon working it (smemd.store.sql.leases) for LEASE_S, renewed every
# third of it: a daemon killed mid-job has its jobs taken over this long after.
LEASE_S = 15.0
POLL_S = 1.0  # on a store several daemons share, how often an idle worker looks for jobs
EMBED_STEP = 64  # chunks embedded, then committed, at a time
MAX_PAUSE_S = 8.0  # the longest wait before trying a stalled store again
# A phase's writes, committed with its move to the next; the document as they left it, if they
# changed it.
Work = Callable[[Writer, IndexChanges], Awaitable[Document | None]]


class JobGone(Exception):
    """The job's document was deleted or revised while the job ran."""


class Worker:
    def __init__(
        self, store: Store, embedder: Embedder, indexes: Indexes, concurrency: int = 4,
        llm: ChatModel | None = None, judge: Judge | None = None, clock: QuietClock | None = None,
        extraction_timeout_s: float | None = None, fetcher: Fetcher | None = None,
        max_chunks: int = IngestConfig().max_chunks, owner: str = "smemd",
    ) -> None:  # fmt: skip
        """With `llm` (a chat model on the background lane) facts are read by the model and
        reconciled by `judge`; without, by the heuristics. Each job step touches `clock`.
        `fetcher` fetches documents given as a URL (by default: no host allowed beyond the guard's
        rules, default limits). `owner` names this daemon in the leases of the jobs it works."""
        self.store = store
        self.owner = owner
        self.max_chunks = max_chunks
        self.fetcher = fetcher or Fetcher.configured(IngestConfig())
        self.concurrency = concurrency
        self.embedder = embedder
        self.indexes = indexes
        self.extraction_timeout_s = extraction_timeout_s
        if llm is not None and judge is None:
            judge = Judge(llm)
        self.readers = Readers(store, indexes, llm, judge)
        self.clock = clock or QuietClock()
        self._wake = asyncio.Event()
        self._wakes = 0  # how many times work was announced: what a read saw
        self._idle = asyncio.Event()
        self._pause = 0.0
        self.stalled: str | None = None  # why the last round could not finish its work
        self.fetches = Fetches(concurrency, done=self.wake)
        # What the worker did (smemd.api.metrics writes them out): seconds per phase, jobs
        # ended (done or failed), attempts that failed and will be tried again, facts read (by
        # the model or the rules) and what reconciling decided for each (a memory is written
        # for every decision but `duplicate`).
        self.phase_seconds = Timings()
        self.ended = Tally()
        self.retried = Tally()
        self.extracted = Tally()
        self.decisions = Tally()

    @property
    def idle(self) -> asyncio.Event:
        """Set while no job is open."""
        return self._idle

    def wake(self) -> None:
        self._wakes += 1
        self._idle.clear()
        self._wake.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def run(self) -> None:
        """Work through open jobs oldest first, `concurrency` at a time, then sleep until woken.

        Chunking, embedding and extracting run side by side, so model calls fan out over the
        fleet; reconciling stays serial and in job order within a namespace (a later fact must
        meet the earlier ones already stored). Fetches run apart from the batches, each waking
        the worker when it ends.
        """
        if not self.store.shared:  # its one daemon: leases a previous run left are void
            try:
                async with self.store.write() as writer:
                    await writer.release_leases(None)
            except SmemError as err:  # a full disk, say: this daemon's own name leases them still
                log.warning("old job leases not cleared: %s", err)
        renewing = asyncio.create_task(self._renew_leases(), name="job-leases")
        try:
            while True:
                self._wake.clear()
                self.stalled = None
                try:
                    if not await self._round():
                        continue
                except Exception as err:  # the worker outlives anything; a bug is logged
                    if not is_storage_fault(err):  # a store that cannot lease is no bug
                        log.exception("ingest worker: %r", err)
                    self.stalled = str(err)
                if self.stalled is None:
                    self._pause = 0.0
                    continue
                # The store could not take the work (a full disk, say): try again in a while,
                # or when new work arrives, until it can. Jobs stay where their last commit left
                # them.
                self._pause = min(MAX_PAUSE_S, max(1.0, self._pause * 2))
                log.warning("ingest worker: %s; trying again in %.0f s", self.stalled, self._pause)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._pause):
                        await self._wake.wait()
        finally:
            # Stopped before the leases are released: a renewal must not land after them.
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
            await self.fetches.cancel()
            with contextlib.suppress(Exception):  # another daemon may take them over at once
                async with self.store.write() as writer:
                    await writer.release_leases(self.owner)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(LEASE_S / 3)
            try:
                async with self.store.write() as writer:
                    await writer.renew_leases(self.owner, now() + LEASE_S)
            except SmemError as err:  # the store is away: a lease lost is taken over, no more
                log.warning("job leases not renewed: %s", err)

    async def _round(self) -> bool:
        """Work the open jobs leased to this daemon, less those being fetched; False when there
        were none (it waited)."""
        wakes = self._wakes
        async with self.store.write() as writer:
            # Alone on the store, a round takes a long list at once; beside other daemons, no
            # more than it works at once, so that a queue filled through one is shared by all.
            ahead = self.concurrency if self.store.shared else self.concurrency * 8
            limit = ahead + len(self.fetches)
            jobs = await writer.lease_jobs(self.owner, limit, now() + LEASE_S, now())
        runnable = [job for job in jobs if job.id not in self.fetches]
        if not runnable:
            if not jobs:  # others' jobs are open jobs too: not idle while another works them
                async with self.store.read() as reader:
                    jobs = await reader.open_jobs(limit=1)
            # Idle only if no job came while the reads ran: its wake would be lost otherwise.
            if not jobs and wakes == self._wakes:
                self._idle.set()
            # Jobs queued through another daemon, or left by one that died, wake no one here.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_S if self.store.shared else None):
                    await self._wake.wait()
            return False
        slots = asyncio.Semaphore(self.concurrency)  # FIFO: an older job always gets one first
        turns: dict[str, asyncio.Event] = {}
        runs = []
        for job in runnable:
            after = turns.get(job.namespace)
            turns[job.namespace] = mine = asyncio.Event()
            runs.append(self._run_job(job, slots, after, mine))
        await asyncio.gather(*runs)
        return True

    async def _run_job(
        self, job: Job, slots: asyncio.Semaphore, after: asyncio.Event | None, mine: asyncio.Event
    ) -> None:
        async with slots:
            try:
                doc = await self._document(job)
                while job.phase not in ("done", "failed"):
                    if job.phase == "fetching":  # the batch goes on without it
                        self.fetches.start(job.id, self._fetch_apart(job))
                        break
                    if job.phase == "reconciling" and after is not None:
                        await after.wait()
                    self.clock.touch()
                    with self.phase_seconds.timing(job.phase):
                        if job.phase == "reconciling":  # serial in a namespace, across daemons
                            async with self.store.turn(f"namespace:{job.namespace}"):
                                job, doc = await self._advance(job, doc)
                        else:
                            job, doc = await self._advance(job, doc)
                if job.phase == "done":
                    self.ended.add("done")
            except JobGone as gone:
                log.info("job %s dropped: %s", job.id, gone)
            except Exception as err:
                if is_storage_fault(err):
                    self.stalled = f"job {job.id} stopped in {job.phase}: {err}"  # not its fault
                else:
                    await self._record_failure(job, err)
            finally:
                mine.set()

    async def _document(self, job: Job) -> Document:
        async with self.store.read() as reader:
            doc = await reader.document_by_id(job.document_id)
        if doc is None or doc.revision != job.revision:
            raise JobGone("its document was deleted or revised")
        return doc

    async def _advance(self, job: Job, doc: Document) -> tuple[Job, Document]:
        """Do one phase's work and commit it together with the next phase."""
        if job.phase == "queued":
            return await self._commit(job, "fetching" if doc.url else "chunking")
        if job.phase == "fetching":
            return await self._fetch(job, doc)
        if job.phase == "chunking":
            return await self._chunk(job, doc)
        if job.phase == "embedding":
            return await self._embed(job, doc)
        if job.phase == "extracting":
            reading = await self.readers.of(job.namespace)
            items = await extract_candidates(
                self.store, self.embedder, job, doc, reading.llm, timeout=self.extraction_timeout_s
            )
            moved = await self._commit(job, "reconciling", lambda w, _: w.insert_candidates(items))
            self.extracted.add("model" if reading.llm is not None else "rules", n=len(items))
            return moved
        if job.phase == "reconciling":
            reconciler = (await self.readers.of(job.namespace)).reconciler
            plans = await reconciler.plan(job, doc)
            moved = await self._commit(
                job, "done", lambda w, changes: reconciler.apply(w, changes, job, doc, plans)
            )
            for plan in plans:
                self.decisions.add(plan.decision.kind, "model" if plan.judged else "rules")
            return moved
        raise AssertionError(f"job {job.id} in unknown phase {job.phase}")

    async def _fetch_apart(self, job: Job) -> None:
        """The fetching phase, outside any batch; the job goes on in the batch after it."""
        try:
            self.clock.touch()
            with self.phase_seconds.timing("fetching"):
                await self._advance(job, await self._document(job))
        except JobGone as gone:
            log.info("job %s dropped: %s", job.id, gone)
        except Exception as err:
            if not is_storage_fault(err):
                await self._record_failure(job, err)
                return
            # Not the page's fault: the job stays in its phase, fetched again after a pause
            # (ending now would wake the worker into fetching it again at once).
            log.warning("job %s: %s; fetching again in %.0f s", job.id, err, MAX_PAUSE_S)
            await asyncio.sleep(MAX_PAUSE_S)

    async def _fetch(self, job: Job, doc: Document) -> tuple[Job, Document]:
        """The page's text becomes the content, committed with the move to chunking; the
        content hash stays that of the URL, so sending the same URL again is a no-op."""
        assert doc.url is not None
        page = await self.fetcher.text_of(doc.url)  # no transaction is open while it runs
        title = page.title or chunking.title_of(page.text)
        return await self._commit(
            job, "chunking",
            lambda w, _: w.revise_document(doc, content=page.text, title=title, type=page.kind),
        )  # fmt: skip

    async def _chunk(self, job: Job, doc: Document) -> tuple[Job, Document]:
        # A 9 MB document takes a second or so to cut: off the loop, which serves everyone. A
        # chat log sent as JSON is cut a message at a time (chat_logs).
        cut = await asyncio.to_thread(chat_logs.cut, doc.content)
        chunking.check_count(len(cut.chunks), self.max_chunks)
        # A log's caption ("The following session took place on 8 May, 2023"), else the times
        # its messages state, date a document that its add did not: a caption is no passage,
        # and the date would be lost.
        told = cut.told if doc.content_date is None else None
        if told is not None:
            doc = msgspec.structs.replace(doc, content_date=told)
        # A turn of a conversation is read with the turn before it, which it answers.
        async with self.store.read() as reader:
            context = await turn_contexts.context_of_document(reader, doc)
        rows = [
            (new_id("chk"), c.position, " > ".join(c.heading_path), c.text,
             context if own is None else own, said_at)
            for c, own, said_at in cut.chunks
        ]  # fmt: skip

        async def work(writer: Writer, changes: IndexChanges) -> Document | None:
            revised = None
            if told is not None:
                # Unless the document was dated meanwhile (a change of its date alone goes on
                # with this job).
                current = await writer.document_by_id(doc.id)
                if current is not None and current.content_date is None:
                    revised = await writer.revise_document(current, content_date=told)
            removed = await writer.replace_chunks(doc, rows, now())
            changes.remove(doc.namespace, "chunks", removed)
            # Text a revision kept has its vector already: found by recall from now on.
            await self._follow_chunks(writer, changes, doc)
            return revised

        return await self._commit(job, "embedding", work)

    async def _embed(self, job: Job, doc: Document) -> tuple[Job, Document]:
        """The chunks' vectors, `EMBED_STEP` at a time, each step its own commit: a large
        document shares the model step by step, a stop loses at most one step, and a revision
        ends the work at the next."""
        after: Phase = "extracting" if doc.task_type == "memory" else "done"
        is_last = False
        while not is_last:
            restated: list[turn_contexts.Restated] = []
            async with self.store.read() as reader:
                pending = await reader.chunks_without_vectors(doc.id, limit=EMBED_STEP)
                is_last = len(pending) < EMBED_STEP
                if is_last:  # the turns after it that were chunked before it was stored
                    restated = await turn_contexts.stale_after(reader, doc)
            texts = [
                chunking.Chunk.stored(c.position, c.heading, c.text, c.context).embedding_text()
                for c in pending
            ]
            vectors = await self.embedder.embed(
                texts + [r.embedding_text() for r in restated], kind="document"
            )
            work = self._storing(doc, pending, restated, vectors)
            # The last step moves the job on in the same commit.
            job, doc = await self._commit(job, after if is_last else job.phase, work)
            self.clock.touch()
        return job, doc

    def _storing(
        self, doc: Document, pending: list[Chunk], restated: list[turn_contexts.Restated],
        vectors: np.ndarray,
    ) -> Work:  # fmt: skip
        """The vectors of the document's pending chunks, then of the chunks of later turns read
        with a new context (turn_contexts.py); each chunk's is written only if its context is
        still the one it was read with."""
        ours = [(c.id, c.context, c.context) for c in pending]
        theirs = [(r.chunk.id, r.chunk.context, r.context) for r in restated]

        async def work(writer: Writer, changes: IndexChanges) -> None:
            await writer.set_chunk_vectors(ours + theirs, vectors)
            await self._follow_chunks(writer, changes, doc, [c.id for c in pending])
            for _, group in itertools.groupby(restated, key=lambda r: r.document.id):
                turn = list(group)
                await self._follow_chunks(
                    writer, changes, turn[0].document, [r.chunk.id for r in turn]
                )

        return work

    async def _follow_chunks(
        self, writer: Writer, changes: IndexChanges, doc: Document,
        chunk_ids: Sequence[str] | None = None,
    ) -> None:  # fmt: skip
        """The indexes take these chunks as written, once the write commits (None: every one
        with a vector). Recorded even when the namespace's indexes are not loaded: a load may
        have read the store before this commit, and it applies what committed meanwhile before
        it is published (per_namespace.py); for a namespace not loading, they are dropped."""
        if chunk_ids == [] or not self.indexes.in_memory:
            return
        rows = await writer.chunk_index_rows_of(doc.id, chunk_ids or ())
        vectors = stack(rows.vectors, self.indexes.dimension)
        changes.add(
            doc.namespace, "chunks", rows.seqs, vectors, rows.texts, rows.live, replacing=True
        )

    async def _commit(
        self, job: Job, phase: Phase, work: Work | None = None
    ) -> tuple[Job, Document]:
        """The phase's work and the job's move to `phase`, in one commit; the job and its
        document after it."""
        async with self.indexes.writing() as (writer, changes):
            doc = await check_current(writer, job, self.owner)
            if work is not None:
                doc = await work(writer, changes) or doc
            if phase != job.phase:
                await writer.set_job_phase(job, phase, now())
        return msgspec.structs.replace(job, phase=phase), doc

    async def _record_failure(self, job: Job, err: Exception) -> None:
        attempts = job.attempts + 1
        reason = f"{err}: {err.details}" if isinstance(err, SmemError) and err.details else str(err)
        if isinstance(err, FetchFailed | TooManyChunks):  # the reason is the whole story
            final = attempts >= MAX_ATTEMPTS or not err.retry  # a refusal stays a refusal
            tries = f"attempt {attempts} of {MAX_ATTEMPTS}" if err.retry else "not retried"
            log.warning("job %s (%s) failed in %s, %s: %s", job.id, job.document_id, job.phase,
                tries, reason)  # fmt: skip
        else:
            final = attempts >= MAX_ATTEMPTS
            log.log(
                logging.ERROR if final else logging.WARNING,
                "job %s (%s) failed in %s, attempt %d of %d: %r",
                job.id, job.document_id, job.phase, attempts, MAX_ATTEMPTS, err,
                exc_info=final,
            )  # fmt: skip
        try:
            async with self.store.write() as writer:
                await writer.count_attempt(job.id)
                if final:
                    await writer.set_job_phase(job, "failed", now(), error=f"{job.phase}: {reason}")
        except Exception as fault:  # not even the failure could be written: it is tried again
            self.stalled = f"cannot record job {job.id}'s failure: {fault}"
            return
        if final:
            self.ended.add("failed")
        else:
            self.retried.add(job.phase)
        if not final:
            await asyncio.sleep(0.2 * attempts)  # a transient fault gets a moment to pass


async def check_current(writer: Writer, job: Job, owner: str) -> Document:
    """Inside a write: the job is still `owner`'s (its row locked until the commit, so no
    other daemon takes it meanwhile) and belongs to its document's current revision; that
    document."""
    if await writer.lease_holder(job.id) != owner:
        raise JobGone("its lease passed to another daemon")
    doc = await writer.document_by_id(job.document_id)
    current = await writer.job(job.id)
    if (
        doc is None
        or doc.revision != job.revision
        or current is None
        or current.phase in ("done", "failed")
    ):
        raise JobGone("its document was deleted or revised")
    return doc
