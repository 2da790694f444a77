"""The store's front: `async with store.read() as r` (or `store.scan(namespace)`), and
`async with store.write() as w`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite

from smemd.store.aliases import AliasReads, AliasWrites
from smemd.store.contradictions import ContradictionReads
from smemd.store.db import Database
from smemd.store.documents import DocumentReads, DocumentWrites
from smemd.store.entities import EntityReads
from smemd.store.graph import GraphReads
from smemd.store.inferences import InferenceReads, InferenceWrites
from smemd.store.judgements import JudgementReads, JudgementWrites
from smemd.store.memories import MemoryReads, MemoryWrites
from smemd.store.namespaces import NamespaceReads, NamespaceWrites
from smemd.store.retractions import RetractionReads, RetractionWrites

# The scan turn of reads across namespaces: no namespace can be named so.
EVERY_NAMESPACE = "*"


class Reader(
    DocumentReads,
    MemoryReads,
    EntityReads,
    AliasReads,
    JudgementReads,
    ContradictionReads,
    GraphReads,
    InferenceReads,
    NamespaceReads,
    RetractionReads,
):
    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db


class Writer(
    DocumentWrites, MemoryWrites, AliasWrites, JudgementWrites, InferenceWrites,
    NamespaceWrites, RetractionWrites, Reader,
):  # fmt: skip
    """Everything a Reader can do, plus writes; lives for one transaction."""


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.database = Database(path)

    async def open(self) -> list[str]:
        return await self.database.open()

    async def close(self) -> None:
        await self.database.close()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Reader]:
        async with self.database.read() as db:
            yield Reader(db)

    @contextlib.asynccontextmanager
    async def scan(self, namespace: str) -> AsyncIterator[Reader]:
        """A reader for reads whose cost grows with the namespace (see Database.scan)."""
        async with self.database.scan(namespace) as db:
            yield Reader(db)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Writer]:
        async with self.database.write() as db:
            yield Writer(db)
