"""The PostgreSQL store (smemd.store.protocol's Store): the shared SQL of every concern
(smemd.store.sql) over a pool of psycopg connections."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import psycopg

from smemd.errors import Conflict
from smemd.store.postgres import search
from smemd.store.postgres.connection import PostgresConnection
from smemd.store.postgres.db import Database
from smemd.store.postgres.search import SearchReads
from smemd.store.records import IndexKind, NamespaceSize
from smemd.store.sql.connection import Connection
from smemd.store.sql.sessions import Sessions, SqlReader


class PostgresReader(SearchReads, SqlReader):
    def __init__(
        self, db: Connection, statistics: dict[tuple[str, IndexKind], tuple[float, float, float]]
    ) -> None:
        super().__init__(db)
        self.statistics = statistics


class PostgresStore(Sessions):
    kind = "postgres"
    shared = True  # many daemons on one database (smemd.store.sql.leases)
    searches_itself = True  # recall asks the database (search.py), not in-memory indexes
    database: Database

    def __init__(
        self, dsn: str, *, pool_size: int = 10, statement_timeout_s: float = 30.0,
        exclusive: bool = False,
    ) -> None:  # fmt: skip
        """`exclusive`: refused while any daemon has the database open, and refusing them."""
        super().__init__()
        self.database = Database(
            dsn, pool_size=pool_size, statement_timeout_s=statement_timeout_s, exclusive=exclusive
        )
        self._where = _redacted(dsn)
        self._statistics: dict[tuple[str, IndexKind], tuple[float, float, float]] = {}

    def reader(self, db: Connection) -> PostgresReader:
        return PostgresReader(db, self._statistics)

    def turn(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self.database.turn(key)

    async def snapshot(self, into: Path) -> list[NamespaceSize]:
        raise Conflict(
            "a PostgreSQL store is backed up by its server",
            "use pg_dump, or base backups with WAL archiving (README: Running on PostgreSQL)",
        )

    async def prepare_search(self, dimension: int) -> None:
        """Make the vector indexes for the embedder's `dimension` (search.prepare)."""
        async with self.database.maintenance() as db:
            await search.prepare(db, dimension)

    @property
    def server_version(self) -> str:
        return self.database.server_version

    @property
    def location(self) -> str:
        """The server and database, never the password."""
        return self._where

    def connection(self, raw: psycopg.AsyncConnection[Any]) -> PostgresConnection:
        return PostgresConnection(raw)


def _redacted(dsn: str) -> str:
    """`postgresql://role@host:port/db` (or the socket directory) from any dsn, no secret."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "postgresql (a dsn that does not parse)"
    host = str(info.get("host") or "localhost")
    port = f":{info['port']}" if info.get("port") else ""
    user = f"{info['user']}@" if info.get("user") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname') or ''}"
