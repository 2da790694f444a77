"""The SQLite store (smemd.store.protocol's Store): `async with store.read() as r` (or
`store.scan(namespace)`), and `async with store.write() as w`, over one file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite

from smemd.store.sqlite.contradictions import ContradictionReads
from smemd.store.sqlite.db import Database
from smemd.store.sqlite.documents import DocumentReads, DocumentWrites
from smemd.store.sqlite.entities import EntityReads
from smemd.store.sqlite.entity_merges import AliasReads, AliasWrites
from smemd.store.sqlite.graph import GraphReads
from smemd.store.sqlite.inferences import InferenceReads, InferenceWrites
from smemd.store.sqlite.judgements import JudgementReads, JudgementWrites
from smemd.store.sqlite.listings import ListingReads
from smemd.store.sqlite.memories import MemoryReads, MemoryWrites
from smemd.store.sqlite.namespaces import NamespaceReads, NamespaceWrites
from smemd.store.sqlite.retractions import RetractionReads, RetractionWrites


class SqliteReader(
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
    ListingReads,
):
    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db


class SqliteWriter(
    DocumentWrites, MemoryWrites, AliasWrites, JudgementWrites, InferenceWrites,
    NamespaceWrites, RetractionWrites, SqliteReader,
):  # fmt: skip
    """Everything a Reader can do, plus writes; lives for one transaction."""


class SqliteStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.database = Database(path)

    @property
    def location(self) -> str:
        return str(self.path)

    async def open(self) -> list[str]:
        return await self.database.open()

    async def close(self) -> None:
        await self.database.close()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[SqliteReader]:
        async with self.database.read() as db:
            yield SqliteReader(db)

    @contextlib.asynccontextmanager
    async def scan(self, namespace: str) -> AsyncIterator[SqliteReader]:
        """A reader for reads whose cost grows with the namespace (see Database.scan)."""
        async with self.database.scan(namespace) as db:
            yield SqliteReader(db)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[SqliteWriter]:
        async with self.database.write() as db:
            yield SqliteWriter(db)
