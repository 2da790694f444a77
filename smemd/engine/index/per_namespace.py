"""One namespace's in-memory indexes, vectors and words per kind, loaded on first use.

A kind past `ann_from` rows keeps its vectors in an HNSW graph, saved in the state dir
(`indexes/<namespace key>/<kind>/`) and loaded from there at the next start, then checked
against the store (loading.py). A load runs off the event loop; a caller that must not stall (a
search) waits `wait_s` for it, then gets a 503 with Retry-After, while other namespaces and the
rest of the daemon go on. `maintain` saves graphs that changed enough, and turns a kind that
grew past `ann_from` into a graph, in the background.

Every write to rows the indexes mirror goes through `writing`: it records its changes
(changes.py) and they are applied here, once it has committed, in the order of the commits. A
load reads the store while writes go on: the changes committed meanwhile wait for it to end and
are applied again before its indexes are published, so none falls between the two.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import shutil
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from smemd.engine.index import saved
from smemd.engine.index.ann import AnnIndex
from smemd.engine.index.changes import Added, Change, IndexChanges, again
from smemd.engine.index.flat import EXACT_UP_TO, FlatIndex
from smemd.engine.index.heap import release_freed_memory
from smemd.engine.index.kinds import ANN_FROM, KindIndex
from smemd.engine.index.loading import load_kind, off_loop
from smemd.engine.index.lookup import InMemoryLookup, Lookups, StoreLookup
from smemd.errors import Unavailable
from smemd.store import deadline
from smemd.store.protocol import Store, Writer
from smemd.store.records import IndexKind
from smemd.tallies import Timings

log = logging.getLogger("smemd.index")

SAVE_EVERY_S = 300.0  # how often `maintain` looks
SAVE_AFTER = 0.02  # of a graph's rows changed since its last save
RETRY_AFTER_S = 5
KINDS: tuple[IndexKind, ...] = ("memories", "chunks")


class NamespaceIndexes:
    __slots__ = ("chunks", "memories")

    def __init__(self, memories: KindIndex, chunks: KindIndex) -> None:
        self.memories = memories
        self.chunks = chunks

    def kinds(self) -> dict[IndexKind, KindIndex]:
        return {"memories": self.memories, "chunks": self.chunks}


class Indexes:
    def __init__(
        self, store: Store, dimension: int, exact_up_to: int = EXACT_UP_TO, *,
        ann_from: int = ANN_FROM, directory: Path | None = None,
    ) -> None:  # fmt: skip
        """`directory`: where graphs are saved (None: never saved, rebuilt at each start)."""
        self.store = store
        self.dimension = dimension
        self.exact_up_to = exact_up_to
        self.ann_from = ann_from
        self.directory = directory
        self._loaded: dict[str, NamespaceIndexes] = {}
        self._loads: dict[str, asyncio.Task[NamespaceIndexes]] = {}
        # Changes committed while a namespace loads, for it to apply before it is published.
        self._pending: dict[str, list[tuple[IndexKind, Change]]] = {}
        self._following = asyncio.Lock()  # one write's changes at a time, in commit order
        self.load_seconds = Timings()  # each namespace's load (smemd.api.metrics)

    def states(self) -> Counter[tuple[IndexKind, str]]:
        """The loaded indexes by kind and how their vectors are searched: `flat` (every row),
        `reduced` (a reduced first pass, past exact_up_to) or `graph` (HNSW)."""
        found: Counter[tuple[IndexKind, str]] = Counter()
        for indexes in self._loaded.values():
            for kind, index in indexes.kinds().items():
                state = (
                    "graph"
                    if index.is_graph
                    else "reduced"
                    if len(index) > self.exact_up_to
                    else "flat"
                )
                found[kind, state] += 1
        return found

    @property
    def loading(self) -> int:
        """How many namespaces are loading their indexes now."""
        return len(self._loads)

    @property
    def in_memory(self) -> bool:
        """Whether searches read these indexes: not when the store searches itself (then none
        is ever loaded, and the changes writes record go nowhere)."""
        return not self.store.searches_itself

    def loaded(self, namespace: str) -> NamespaceIndexes | None:
        """The indexes if already in memory (a load in progress is not: it is published once
        it has caught up with the writes made meanwhile)."""
        return self._loaded.get(namespace)

    async def get(self, namespace: str, *, wait_s: float | None = None) -> NamespaceIndexes:
        """The indexes, loading them if need be; past `wait_s` of loading, Unavailable."""
        try:
            async with asyncio.timeout(wait_s):
                while (indexes := self._loaded.get(namespace)) is None:
                    load = self._load_task(namespace)
                    try:
                        return await asyncio.shield(load)
                    except asyncio.CancelledError:
                        # `forget` ends a load whose namespace went (removed, moved, imported
                        # over): its waiters load what the store holds now. Only a cancel of
                        # the waiter itself (a stop, the timeout) ends the wait.
                        if not load.cancelled() or _cancelling():
                            raise
                return indexes
        except TimeoutError:
            raise loading_error(namespace) from None

    def _load_task(self, namespace: str) -> asyncio.Task[NamespaceIndexes]:
        """The namespace's load, started if none runs. It outlives the request that started it
        (its own task, shielded, free of the request's deadline), which would otherwise be cut
        and leave the next to begin again."""
        if (task := self._loads.get(namespace)) is None:
            with deadline.lifted():
                task = self._loads[namespace] = asyncio.create_task(
                    self._load(namespace), name=f"index-load-{namespace}"
                )
            task.add_done_callback(lambda done: self._finished(namespace, done))
        return task

    async def lookup(self, namespace: str, *, wait_s: float | None = None) -> Lookups:
        """What searches the namespace: the store itself if it can (nothing is loaded), else
        its indexes, loaded if need be (`get`)."""
        if not self.in_memory:
            return Lookups(
                StoreLookup(self.store, namespace, "memories"),
                StoreLookup(self.store, namespace, "chunks"),
            )
        indexes = await self.get(namespace, wait_s=wait_s)
        return Lookups(InMemoryLookup(indexes.memories), InMemoryLookup(indexes.chunks))

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[tuple[Writer, IndexChanges]]:
        """A store write and the index changes it records; they are applied once it commits
        (never if it fails), even if the writer is cancelled meanwhile."""
        changes = IndexChanges()
        async with self.store.write() as writer:
            yield writer, changes
        if changes.made or changes.dropped:
            # A task starts in the order it was made, so follows queue in the order of commits.
            await asyncio.shield(asyncio.create_task(self._follow(changes)))

    async def _follow(self, changes: IndexChanges) -> None:
        async with self._following:
            for namespace in changes.dropped:
                self.forget(namespace)
            for namespace, kind, change in changes.made:
                if (loaded := self._loaded.get(namespace)) is not None:
                    change.apply(loaded.memories if kind == "memories" else loaded.chunks)
                    if isinstance(change, Added):
                        await asyncio.sleep(0)  # the loop serves others between steps
                elif namespace in self._loads:
                    self._pending.setdefault(namespace, []).append((kind, again(change)))
                # else: a load that starts later reads the rows as committed

    def _finished(self, namespace: str, task: asyncio.Task[NamespaceIndexes]) -> None:
        if self._loads.get(namespace) is task:
            del self._loads[namespace]
            self._pending.pop(namespace, None)  # a failed load's: the next reads them anew

    def forget(self, namespace: str) -> None:
        """The namespace is gone or moved: drop its indexes and their files."""
        self._loaded.pop(namespace, None)
        self._pending.pop(namespace, None)
        if (task := self._loads.pop(namespace, None)) is not None:
            task.cancel()
        if (path := self._path(namespace, "memories")) is not None:
            shutil.rmtree(path.parent, ignore_errors=True)

    async def maintain(self, every_s: float = SAVE_EVERY_S) -> None:
        """Forever: turn grown kinds into graphs, save graphs that changed enough."""
        while True:
            await asyncio.sleep(every_s)
            await self.save(SAVE_AFTER, grow=True)

    async def save(self, share: float = 0.0, *, grow: bool = False) -> None:
        """Save each graph with more than `share` of its rows changed since its last save;
        with `grow`, first make graphs of kinds grown past `ann_from`."""
        for namespace, indexes in list(self._loaded.items()):
            for kind, index in indexes.kinds().items():
                if grow and not index.is_graph and len(index) >= self.ann_from:
                    await self._to_graph(index)
                if index.is_graph and index.changes > share * len(index):
                    await self._save(namespace, kind, index)

    async def _load(self, namespace: str) -> NamespaceIndexes:
        with self.load_seconds.timing():
            return await self._load_kinds(namespace)

    async def _load_kinds(self, namespace: str) -> NamespaceIndexes:
        async with self.store.read() as reader:
            counts = await reader.count_vectors(namespace)
        found: dict[IndexKind, KindIndex] = {}
        for kind, rows in zip(KINDS, counts, strict=True):
            saved_at = self._path(namespace, kind) if rows >= self.ann_from else None
            index, worth_saving = await load_kind(
                self.store, namespace, kind, rows, saved_at, self._empty, dimension=self.dimension
            )
            found[kind] = index
            if worth_saving and index.is_graph:
                await self._save(namespace, kind, index)
        release_freed_memory()
        indexes = NamespaceIndexes(found["memories"], found["chunks"])
        # Published only once nothing waits: no await between the last change and publishing.
        while pending := self._pending.pop(namespace, None):
            for kind, change in pending:
                change.apply(indexes.memories if kind == "memories" else indexes.chunks)
                await asyncio.sleep(0)
        self._loaded[namespace] = indexes
        return indexes

    def _empty(self, rows: int) -> KindIndex:
        return KindIndex.empty(
            self.dimension, max(1024, rows), exact_up_to=self.exact_up_to,
            graph=rows >= self.ann_from,
        )  # fmt: skip

    async def _to_graph(self, index: KindIndex) -> None:
        """A flat kind grown past `ann_from` becomes a graph, built in a thread."""
        if not isinstance(index.vectors, FlatIndex):
            return
        keys, vectors, live = index.vectors.rows()
        index.hold()
        try:
            graph = AnnIndex(self.dimension)
            await off_loop(graph.add, keys.tolist(), vectors, live.tolist())
            index.vectors = graph
        finally:
            index.release()

    async def _save(self, namespace: str, kind: IndexKind, index: KindIndex) -> None:
        if self.directory is None:
            return
        saving = index.changes  # changes made while the save runs count toward the next
        index.hold()
        try:
            await off_loop(saved.save, self._path(namespace, kind), index)
            index.changes -= saving
        except OSError as err:  # a full disk costs the next start a rebuild, nothing more
            log.warning("index of %s %s not saved: %s", namespace, kind, err)
        finally:
            index.release()

    def _path(self, namespace: str, kind: IndexKind) -> Path | None:
        if self.directory is None:
            return None
        # Namespace names may hold any character: the folder is named by a hash of it.
        key = hashlib.blake2b(namespace.encode(), digest_size=10).hexdigest()
        return self.directory / key / kind


def _cancelling() -> bool:
    """Whether the running task is being cancelled (its own cancel, not one it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def loading_error(namespace: str) -> Unavailable:
    error = Unavailable(
        "index loading",
        f"the indexes of namespace {namespace!r} are being loaded; other namespaces are served",
    )
    error.retry_after = RETRY_AFTER_S
    return error
