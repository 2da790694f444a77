"""The tests' one door to the database behind the store's back: the only module of tests/ that
imports sqlite3 or aiosqlite (tests/test_layout.py holds it so).

For what the store's Protocols cannot say: rows an older build or a crash left (written straight
into the file, or in a store writer's own transaction between its typed calls) and counts read
straight off the tables. `connection`, `raw_connection`, `read_rows` and `execute` speak the
shared SQL (smemd.store.sql) to either backend; what reaches the file itself (`connect`, `rows`,
`database_path`) refuses a store that is not the SQLite one, so a test that needs it says so by
failing, not by reading the wrong thing.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

from smemd.engine.core import Engine
from smemd.store.opening import DATABASE_NAME
from smemd.store.protocol import Reader, Store, Writer
from smemd.store.sql.connection import Connection
from smemd.store.sql.sessions import SqlReader
from smemd.store.sqlite.store import SqliteStore

Params = Iterable[Any]


def sqlite_store(store: Store) -> SqliteStore:
    """`store`, which must be the SQLite one."""
    if not isinstance(store, SqliteStore):
        raise TypeError(f"a raw SQLite test needs the SQLite store, not {type(store).__name__}")
    return store


def database_path(where: Engine | Store | Path) -> Path:
    """The database file of an engine, of a store, or of a daemon's state directory."""
    if isinstance(where, Path):
        return where / DATABASE_NAME
    if isinstance(where, Engine):
        where = where.store
    return sqlite_store(where).path


@contextlib.contextmanager
def connect(path: Path | str) -> Iterator[sqlite3.Connection]:
    """A plain connection to the file (or ":memory:"): committed if the block ends, rolled back
    if it raises, closed either way."""
    db = sqlite3.connect(path)
    try:
        with db:
            yield db
    finally:
        db.close()


def rows(path: Path | str, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
    """What one query of the file returns."""
    with connect(path) as db:
        return db.execute(sql, list(params)).fetchall()


def connection(session: Reader | Writer) -> Connection:
    """The connection under a store's reader or writer: what it runs joins that read's moment or
    that write's transaction."""
    if not isinstance(session, SqlReader):  # a SqlWriter is one too
        raise TypeError(f"no raw connection under {type(session).__name__}")
    return session.db


@contextlib.asynccontextmanager
async def raw_connection(store: Store, *, write: bool = False) -> AsyncIterator[Connection]:
    """The connection of one `store.read()` (or, with `write`, one `store.write()`)."""
    if write:
        async with store.write() as writer:
            yield connection(writer)
    else:
        async with store.read() as reader:
            yield connection(reader)


async def read_rows(store: Store, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
    """What one query returns, in one read of the store."""
    async with raw_connection(store) as db:
        return [tuple(row) for row in await db.execute_fetchall(sql, list(params))]


async def execute(store: Store, sql: str, params: Params = ()) -> None:
    """One statement, as one write of the store; nothing else (an index, a cache) is told."""
    async with raw_connection(store, write=True) as db:
        await db.execute(sql, list(params))
