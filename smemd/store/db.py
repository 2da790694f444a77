"""Connections: one writer (every write under BEGIN IMMEDIATE) and a few read-only readers.

Reads never wait on a long ingest transaction: WAL lets readers see the last commit while the
writer works.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite

from smemd.store.schema import migrate

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    # NORMAL in WAL mode loses at most the last commits on power loss, never integrity.
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 5000",
)


class Database:
    def __init__(self, path: Path, readers: int = 2) -> None:
        self.path = path
        self._reader_count = readers
        self._writer: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []

    async def open(self) -> list[str]:
        """Open, migrate and return the migrations applied now."""
        self._writer = await aiosqlite.connect(self.path, isolation_level=None)
        for pragma in PRAGMAS:
            await self._writer.execute(pragma)
        applied = await migrate(self._writer)
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
        for _ in range(self._reader_count):
            reader = await aiosqlite.connect(uri, uri=True, isolation_level=None)
            await reader.execute("PRAGMA busy_timeout = 5000")
            self._all_readers.append(reader)
            self._readers.put_nowait(reader)
        return applied

    async def close(self) -> None:
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        if self._writer is not None:
            await self._writer.close()
            self._writer = None

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One transaction on the writer; committed on exit, rolled back on any exception."""
        assert self._writer is not None, "database is not open"
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                await self._writer.execute("ROLLBACK")
                raise
            await self._writer.execute("COMMIT")

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        reader = await self._readers.get()
        try:
            yield reader
        finally:
            self._readers.put_nowait(reader)
