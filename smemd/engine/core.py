"""The engine as one object: store, indexes, embedder, worker, and the operations over them."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from smemd.backup.snapshot import Backups
from smemd.config import EngineConfig, IngestConfig
from smemd.engine.dreaming.dreamer import Dreamer
from smemd.engine.entities.decisions import AliasDecisions
from smemd.engine.entities.profiles import EntityProfiles
from smemd.engine.exporting import Exports
from smemd.engine.graph import Graphs
from smemd.engine.hydration import Hydration
from smemd.engine.imports.loader import Imports
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.ingest.documents import Documents
from smemd.engine.ingest.fetching import Fetcher
from smemd.engine.ingest.worker import Worker
from smemd.engine.judgement.calibration import DEFAULT_THRESHOLDS, Calibration
from smemd.engine.judgement.labels import Labels
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.memories import Memories
from smemd.engine.namespaces import NamespaceChanges
from smemd.engine.peers import Peers
from smemd.engine.quiet import QuietClock
from smemd.engine.recall.hybrid import Recall, Reranker
from smemd.engine.recall.profile import Profiles
from smemd.engine.rederive import Rederivations
from smemd.engine.retraction import Retractions
from smemd.engine.review import Review
from smemd.engine.undo import Undos
from smemd.errors import SmemError, StorageUnavailable
from smemd.fleet.builtin import Embedder
from smemd.fleet.llama import ChatModel
from smemd.paths import INDEX_DIR_NAME
from smemd.store.protocol import EVERY_NAMESPACE, Store
from smemd.store.records import Job, Namespace, Peer
from smemd.store.scope import EVERY, Scope
from smemd.tallies import Tally, Timings

log = logging.getLogger("smemd.engine")

STOP_STEP_S = 5.0
OPEN_AGAIN_S = 2.0  # how often a shared store not reached at start is tried again


class EmbedderMismatch(Exception):
    pass


class Engine:
    def __init__(
        self,
        store: Store,
        state_dir: Path,
        embedder: Embedder,
        config: EngineConfig,
        *,
        background: Embedder | None = None,
        reranker: Reranker | None = None,
        llm: ChatModel | None = None,
        ingest: IngestConfig | None = None,
    ) -> None:
        """`store` holds the memory (not yet opened: `start` opens it); `state_dir` keeps the
        indexes' files; `embedder` serves searches; `background` (the same model on other nodes)
        serves ingest; `reranker`, when the fleet has a cross-encoder, re-scores the top of each search; `llm`,
        when it has a chat model, reads facts and reconciles them in place of the heuristics;
        `ingest` says which hosts documents given as a URL may come from, and the fetch's limits."""
        ingest = ingest or IngestConfig()
        self.llm = llm
        self.config = config
        self.embedder = embedder
        self.store = store
        self.indexes = Indexes(
            self.store, embedder.dimension, config.exact_scan_up_to, ann_from=config.ann_from,
            directory=state_dir / INDEX_DIR_NAME,
        )  # fmt: skip
        self.judge = Judge(llm, thresholds=DEFAULT_THRESHOLDS) if llm is not None else None
        clock = QuietClock()
        self.peers = Peers(self.store, state_dir)
        self.worker = Worker(
            self.store, background or embedder, self.indexes, config.ingest_concurrency, llm,
            judge=self.judge, clock=clock, extraction_timeout_s=config.extraction_timeout_s,
            fetcher=Fetcher.configured(ingest), max_chunks=ingest.max_chunks, owner=self.peers.me.id,
        )  # fmt: skip
        self.recall = Recall(self.store, embedder, self.indexes, reranker=reranker, clock=clock)
        self.dreamer = Dreamer(
            self.store, self.indexes, self.judge, clock, self.worker.idle,
            enabled=config.dreaming, quiet_s=config.dreaming_quiet_s,
            embedder=background or embedder, model=llm,
        )  # fmt: skip
        self.calibration = Calibration(self.store, self.judge)
        self.labels = Labels(self.store)
        self.documents = Documents(
            self.store, self.indexes, self.worker, fetch_urls=ingest.fetch_urls,
            max_chunks=ingest.max_chunks,
        )  # fmt: skip
        self.memories = Memories(self.store, self.indexes, self.recall, embedder)
        self.hydration = Hydration(self.store)
        self.graphs = Graphs(self.store, self.recall)
        self.retractions = Retractions(self.store, self.indexes)
        self.undos = Undos(self.store, self.retractions)
        self.profiles = Profiles(self.store, self.recall)
        self.review = Review(self.store, self.indexes)
        self.entities = EntityProfiles(self.store)
        self.aliases = AliasDecisions(self.store)
        self.namespace_changes = NamespaceChanges(self.store, self.indexes, self.worker)
        self.rederivations = Rederivations(
            self.store, self.indexes, self.documents, self.worker.readers
        )
        self.exports = Exports(self.store)
        self.backups = Backups(self.store, state_dir, self.exports.lines)
        self.imports = Imports(
            self.store, self.indexes, background or embedder, self.worker, state_dir / "imports"
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._open_at: float | None = None  # when the store was opened

    async def start(self) -> None:
        """Open the store and start the background work. A shared store (PostgreSQL) that
        cannot be reached does not stop the daemon: it serves without it (store-backed routes
        answer 503 storage_unavailable, `/v1/health` says so) and opens it once it answers."""
        try:
            await self._open()
        except StorageUnavailable as err:
            if not self.store.shared:
                raise
            log.warning(
                "store %s unreachable (%s): serving without it, trying again every %.0f s",
                self.store.location, err, OPEN_AGAIN_S,
            )  # fmt: skip
            self._tasks = [asyncio.create_task(self._open_when_reachable(), name="store-open")]
            return
        self._begin()

    @property
    def store_open(self) -> bool:
        return self._open_at is not None

    async def _open(self) -> None:
        applied = await self.store.open()
        if applied:
            log.info("store %s: applied %s", self.store.location, ", ".join(applied))
        try:
            await self._check_embedder()
            await self.calibration.load()
        except BaseException:
            await self.store.close()
            raise
        self._open_at = time.time()

    async def _open_when_reachable(self) -> None:
        while True:
            await asyncio.sleep(OPEN_AGAIN_S)
            try:
                await self._open()
            except StorageUnavailable as err:
                log.debug("store %s still unreachable: %s", self.store.location, err)
                continue
            except SmemError as err:  # reached, but refused: no retry mends that
                log.error("store %s cannot be used: %s", self.store.location, err)
                return
            log.info("store %s reached: serving it", self.store.location)
            self._begin()
            return

    def _begin(self) -> None:
        self._tasks += [
            asyncio.create_task(self.worker.run(), name="ingest-worker"),
            asyncio.create_task(self.dreamer.run(), name="dreaming"),
            asyncio.create_task(self.indexes.maintain(), name="index-maintenance"),
            asyncio.create_task(self._prepare_search(), name="search-indexes"),
        ]
        if self.store.shared:  # other daemons may be on it: say this one is
            self._tasks.append(asyncio.create_task(self.peers.beat(), name="heartbeat"))
        self.worker.wake()  # resume whatever a previous run left unfinished

    async def _prepare_search(self) -> None:
        """A store that searches itself builds its vector indexes for this embedder, which can
        take minutes on a store copied in; it serves meanwhile, computing every distance."""
        try:
            await self.store.prepare_search(self.embedder.dimension)
        except SmemError as err:  # the next start tries again
            log.warning("search indexes not built: %s", err)

    async def _check_embedder(self) -> None:
        """Vectors of two embedders live in different spaces: never compare them."""
        identity = f"{self.embedder.name}/{self.embedder.dimension}"
        async with self.store.write() as writer:
            recorded = await writer.setting("embedder")
            if recorded is None:
                await writer.set_setting("embedder", identity)
        if recorded is not None and recorded != identity:
            raise EmbedderMismatch(
                f"the store's vectors were made by {recorded}, but the embedder now is {identity};"
                " repair the model install, or use a new state dir"
            )

    async def other_daemons(self) -> list[Peer]:
        """The other daemons on a shared store heard from lately (none on SQLite's)."""
        return await self.peers.others() if self.store.shared else []

    async def open_job_phases(self) -> dict[str, int]:
        """Open ingest jobs by the phase they are in."""
        async with self.store.read() as reader:
            return await reader.open_job_phases()

    def store_tallies(self) -> tuple[Timings, Tally]:
        """The store's writer waits (seconds) and its faults by code, as metrics read them."""
        return self.store.writer_wait, self.store.faults

    def store_identity(self) -> tuple[str, str, str]:
        """The store's kind, where it is (never a secret) and its engine's version."""
        return self.store.kind, self.store.location, self.store.server_version

    async def stop(self) -> None:
        """Cancel the worker and dreaming, then close the store; each step has a bound, so a
        store that hangs (a failing disk) cannot hold the daemon's stop forever."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=STOP_STEP_S)
            for task in stuck:
                log.error(
                    "%s did not stop within %.0f s; left behind", task.get_name(), STOP_STEP_S
                )
        self._tasks = []
        await self.worker.readers.close()
        try:
            # What a stop cuts short is only a newer save: the last complete one still loads,
            # and the store's rows bring it up to date.
            async with asyncio.timeout(STOP_STEP_S):
                await self.indexes.save()
        except TimeoutError:
            log.warning("indexes not saved within %.0f s; the next start catches up", STOP_STEP_S)
        try:
            async with asyncio.timeout(STOP_STEP_S):
                await self.store.close()
        except TimeoutError:
            log.error("the store did not close within %.0f s", STOP_STEP_S)

    async def namespaces(
        self, *, page: int, limit: int, contains: str = "", scope: Scope = EVERY
    ) -> tuple[list[Namespace], int]:
        async with self.store.scan(EVERY_NAMESPACE) as reader:
            rows = await reader.namespaces(
                contains=contains, scope=scope, limit=limit, offset=(page - 1) * limit
            )
            return rows, await reader.count_namespaces(contains, scope)

    async def namespace(self, name: str) -> Namespace | None:
        async with self.store.read() as reader:
            return await reader.namespace(name)

    async def jobs(
        self, limit: int = 50, namespace: str | None = None, scope: Scope = EVERY
    ) -> tuple[list[Job], dict[str, int]]:
        async with self.store.scan(namespace or EVERY_NAMESPACE) as reader:
            return (
                await reader.recent_jobs(limit, namespace, scope),
                await reader.job_counts(namespace, scope),
            )

    async def wait_idle(self) -> None:
        """Until no job is open (tests and benchmarks use this)."""
        await self.worker.wait_idle()
