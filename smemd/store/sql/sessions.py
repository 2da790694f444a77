"""A store's sessions, whichever backend: a reader is every concern's reads over one Connection,
a writer every concern's writes too, and a store hands out one per `read()`, `scan()` or
`write()` of its database's connections."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from smemd.errors import StorageFull, StorageUnavailable, TimedOut
from smemd.store.sql.connection import Connection
from smemd.store.sql.contradictions import ContradictionReads
from smemd.store.sql.documents import DocumentReads
from smemd.store.sql.entities import EntityReads
from smemd.store.sql.entity_merges import AliasReads, AliasWrites
from smemd.store.sql.exporting import ExportReads
from smemd.store.sql.graph import GraphReads
from smemd.store.sql.importing import ImportReads, ImportWrites
from smemd.store.sql.inferences import InferenceReads, InferenceWrites
from smemd.store.sql.jobs import JobReads, JobWrites
from smemd.store.sql.judgements import JudgementReads, JudgementWrites
from smemd.store.sql.leases import LeaseReads, LeaseWrites
from smemd.store.sql.listings import ListingReads
from smemd.store.sql.memories import MemoryReads, MemoryWrites
from smemd.store.sql.namespaces import NamespaceReads, NamespaceWrites
from smemd.store.sql.retractions import RetractionReads, RetractionWrites
from smemd.tallies import Tally, Timings


class SqlReader(
    DocumentReads,
    JobReads,
    MemoryReads,
    EntityReads,
    AliasReads,
    JudgementReads,
    ContradictionReads,
    GraphReads,
    InferenceReads,
    NamespaceReads,
    RetractionReads,
    ListingReads,
    LeaseReads,
    ExportReads,
    ImportReads,
):
    def __init__(self, db: Connection) -> None:
        self.db = db


class SqlWriter(
    JobWrites, MemoryWrites, AliasWrites, JudgementWrites, InferenceWrites,
    NamespaceWrites, RetractionWrites, LeaseWrites, ImportWrites, SqlReader,
):  # fmt: skip
    """Everything a Reader can do, plus writes; lives for one transaction. (JobWrites brings
    DocumentWrites, as MemoryWrites and AliasWrites bring EntityWrites.)"""


class Connections(Protocol):
    """A backend's database: its driver's connections, for one read, scan or transaction."""

    async def open(self) -> list[str]: ...
    async def close(self) -> None: ...

    def read(self) -> AbstractAsyncContextManager[Any]: ...
    def scan(self, namespace: str) -> AbstractAsyncContextManager[Any]: ...
    def write(self) -> AbstractAsyncContextManager[Any]: ...


class Sessions:
    """The read, scan and write of smemd.store.protocol's Store, for a backend that says how
    its driver's connection becomes a Connection (`connection`).

    It counts, for the metrics: the seconds a write waited for the writer (`writer_wait`), and
    the store's faults by kind (`faults`: a full disk, a store away, a statement stopped at
    its deadline)."""

    database: Connections

    def __init__(self) -> None:
        self.writer_wait = Timings()
        self.faults = Tally()

    def connection(self, raw: Any) -> Connection:
        raise NotImplementedError

    def reader(self, db: Connection) -> SqlReader:
        """A reader over `db`: the shared reads, and a backend's own if it has more."""
        return SqlReader(db)

    async def open(self) -> list[str]:
        """Open (migrating first) and return the migrations applied now."""
        return await self.database.open()

    async def close(self) -> None:
        await self.database.close()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[SqlReader]:
        with self._counting_faults():
            async with self.database.read() as raw:
                yield self.reader(self.connection(raw))

    @contextlib.asynccontextmanager
    async def scan(self, namespace: str) -> AsyncIterator[SqlReader]:
        """A reader for reads whose cost grows with the namespace (one per namespace at once)."""
        with self._counting_faults():
            async with self.database.scan(namespace) as raw:
                yield self.reader(self.connection(raw))

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[SqlWriter]:
        with self._counting_faults():
            asked = time.perf_counter()
            async with self.database.write() as raw:
                self.writer_wait.observe(time.perf_counter() - asked)
                yield SqlWriter(self.connection(raw))

    @contextlib.contextmanager
    def _counting_faults(self) -> Iterator[None]:
        try:
            yield
        except (StorageFull, StorageUnavailable, TimedOut) as err:  # timed out: a deadline passed
            self.faults.add(err.code)
            raise
