"""The SQLite store (smemd.store.protocol's Store): `async with store.read() as r` (or
`store.scan(namespace)`), and `async with store.write() as w`, over one file."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import aiosqlite

from smemd.store.records import NamespaceSize
from smemd.store.sql.sessions import Sessions
from smemd.store.sqlite.connection import SqliteConnection
from smemd.store.sqlite.db import Database


class SqliteStore(Sessions):
    kind = "sqlite"
    shared = False
    searches_itself = False
    database: Database

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.database = Database(path)

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def server_version(self) -> str:
        return sqlite3.sqlite_version

    def connection(self, raw: aiosqlite.Connection) -> SqliteConnection:
        return SqliteConnection(raw)

    async def prepare_search(self, dimension: int) -> None:
        """Nothing: recall searches SQLite's rows through indexes in memory."""

    def turn(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Nothing to wait for: one daemon opens the file, and orders its own work."""
        return contextlib.nullcontext()

    async def snapshot(self, into: Path) -> list[NamespaceSize]:
        return await self.database.snapshot(into)
