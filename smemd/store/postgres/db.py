"""Connections to PostgreSQL: one pool, reads in autocommit (each statement sees the last
commit, as a SQLite reader does), and writes one at a time per daemon, each one transaction.

Reads come in the store's two kinds (smemd.store.protocol): `read()` for lookups, `scan(ns)` for
reads that walk a namespace, one per namespace at a time and at most a quarter of the pool in
all, so that lookups always find a connection. Writes are serial within a daemon because the
engine applies each commit's index changes in commit order (smemd.engine.index.changes).

Under a request's deadline (smemd.store.deadline) the wait for a connection ends there and a
statement still running is cancelled on the server: it answers TimedOut. Every statement also
has the server-side `statement_timeout` of `[store] statement-timeout-s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import psycopg_pool
from psycopg.types.string import TextLoader

from smemd.errors import StorageUnavailable, TimedOut
from smemd.store import deadline
from smemd.store.postgres.failures import (
    OLDEST_SERVER,
    RETRY_AFTER_S,
    Refused,
    refusal,
    storage_fault,
)
from smemd.store.postgres.schema import MIGRATION_LOCK, migrate
from smemd.store.postgres.search import EF_SEARCH
from smemd.store.turns import NamespaceTurns

log = logging.getLogger("smemd.store")
OWNER_LOCK = MIGRATION_LOCK + 1
MAINTENANCE_LOCK = MIGRATION_LOCK + 2  # one daemon at a time builds the search indexes
# The longest a request waits for a connection: with the server gone, the pool cannot make
# one, and a request answers 503 after this rather than hang.
POOL_WAIT_S = 5.0
TURN_CLASS = MIGRATION_LOCK  # the first of a turn's two keys, the second its key's hash
Raw = psycopg.AsyncConnection[Any]


class Database:
    def __init__(
        self, dsn: str, *, pool_size: int, statement_timeout_s: float, exclusive: bool = False
    ) -> None:
        """`exclusive`: no daemon may have the database open meanwhile (a store copy)."""
        self._dsn = dsn
        self._exclusive = exclusive
        self._pool_size = pool_size
        self._options = (
            f"-c statement_timeout={int(statement_timeout_s * 1000)}"
            f" -c hnsw.ef_search={EF_SEARCH} -c hnsw.iterative_scan=relaxed_order"
        )
        self._pool: psycopg_pool.AsyncConnectionPool[Raw] | None = None
        self._write_lock = asyncio.Lock()
        self._scanning = NamespaceTurns()
        self._scans = asyncio.Semaphore(max(1, pool_size // 4))
        self.server_version = ""
        self._owner: Raw | None = None  # holds the claim on the database while open

    async def open(self) -> list[str]:
        """Check the server, claim the database, migrate, open the pool; the migrations applied
        now. A fault a retry may cure is StorageUnavailable; one it cannot is Refused."""
        try:
            self._owner = await self._connect()
            await self._check(self._owner)
            await self._claim(self._owner)
            applied = await migrate(self._owner)
        except BaseException as err:
            await self.close()
            if not isinstance(err, psycopg.Error):
                raise
            fault = refusal(err)
            if fault is not None:
                raise fault from err
            raise storage_fault(err) or StorageUnavailable("storage unavailable", str(err)) from err
        self._pool = psycopg_pool.AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._pool_size,
            kwargs=self._connection_options(),
            configure=_configure,
            check=psycopg_pool.AsyncConnectionPool.check_connection,
            open=False,
            timeout=POOL_WAIT_S,
            name="smem",
        )
        await self._pool.open(wait=False)
        return applied

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._owner is not None:
            await self._owner.close()  # and with it the claim
            self._owner = None

    async def _connect(self) -> Raw:
        db = await psycopg.AsyncConnection.connect(self._dsn, **self._connection_options())
        await _configure(db)
        return db

    def _connection_options(self) -> dict[str, Any]:
        return {
            "autocommit": True,
            "cursor_factory": psycopg.AsyncClientCursor,
            "options": self._options,
            "application_name": "smemd",
        }

    async def _check(self, db: Raw) -> None:
        version = db.info.server_version
        self.server_version = db.info.parameter_status("server_version") or str(version)
        if version < OLDEST_SERVER:
            raise Refused(
                f"PostgreSQL {self.server_version} is too old for the store: it needs 14 or later"
            )
        cursor = await db.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if await cursor.fetchone() is None:
            raise Refused(
                "PostgreSQL has no `vector` extension (pgvector) to create: install it on the"
                ' server (see the README\'s "Running on PostgreSQL")'
            )

    async def _claim(self, db: Raw) -> None:
        """Daemons share the database (a shared session advisory lock each, held by the
        connection that took it until the store closes); a store copy has it alone."""
        if self._exclusive:
            cursor = await db.execute("SELECT pg_try_advisory_lock(%s)", [OWNER_LOCK])
            why = "a smemd has this database open: stop every daemon on it first"
        else:
            cursor = await db.execute("SELECT pg_try_advisory_lock_shared(%s)", [OWNER_LOCK])
            why = "a store copy is writing or reading this database: start when it has ended"
        row = await cursor.fetchone()
        if row is None or not row[0]:
            raise Refused(why)

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        """`key`'s turn across daemons: a session advisory lock on a connection held for the
        block (a transaction's lock would not cover the reads done before the write), freed by
        the server if the daemon dies. Its two-number key space is apart from the one-number
        keys of migrations and maintenance."""
        digest = int.from_bytes(
            hashlib.blake2b(key.encode(), digest_size=4).digest(), "big", signed=True
        )
        async with self._lease(bounded=False) as db, _faults():
            await db.execute("SELECT pg_advisory_lock(%s, %s)", [TURN_CLASS, digest])
            try:
                yield
            finally:
                with contextlib.suppress(psycopg.Error):  # a lost connection freed it already
                    await db.execute("SELECT pg_advisory_unlock(%s, %s)", [TURN_CLASS, digest])

    @contextlib.asynccontextmanager
    async def maintenance(self) -> AsyncIterator[Raw]:
        """A connection of its own, without a statement timeout, for work that takes minutes
        (an index build), one daemon at a time (a session advisory lock)."""
        async with _faults():
            db = await self._connect()
        try:
            async with _faults():
                await db.execute("SET statement_timeout = 0")
                await db.execute("SELECT pg_advisory_lock(%s)", [MAINTENANCE_LOCK])
                yield db
        finally:
            await db.close()  # and with it the lock

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[Raw]:
        """One transaction; committed on exit, rolled back on any exception (and by the server
        if the connection is lost, so nothing is half-written). Only the waits are bounded by a
        deadline: once begun, a transaction runs to its commit or rollback."""
        await deadline.waiting(self._write_lock.acquire())
        try:
            async with self._lease(bounded=False) as db, _faults(), db.transaction():
                yield db
        finally:
            self._write_lock.release()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[Raw]:
        async with self._lease() as db, self._cancelled_at_deadline(db):
            yield db

    @contextlib.asynccontextmanager
    async def scan(self, namespace: str) -> AsyncIterator[Raw]:
        async with self._scanning.of(namespace):
            await deadline.waiting(self._scans.acquire())
            try:
                async with self._lease() as db, self._cancelled_at_deadline(db):
                    yield db
            finally:
                self._scans.release()

    @contextlib.asynccontextmanager
    async def _lease(self, *, bounded: bool = True) -> AsyncIterator[Raw]:
        pool = self._pool
        if pool is None:  # not reached yet (the engine opens it again until it is), or closed
            error = StorageUnavailable("storage unavailable", "the database is not open")
            error.retry_after = RETRY_AFTER_S
            raise error
        try:
            db = await (deadline.waiting(pool.getconn()) if bounded else pool.getconn())
        except (psycopg.Error, psycopg_pool.PoolTimeout) as err:
            raise storage_fault(err) or StorageUnavailable("storage unavailable", str(err)) from err
        try:
            yield db
        finally:
            await pool.putconn(db)

    @contextlib.asynccontextmanager
    async def _cancelled_at_deadline(self, db: Raw) -> AsyncIterator[None]:
        limit = deadline.current()
        alarm, lease_over = None, asyncio.Event()
        if limit is not None:
            alarm = asyncio.get_running_loop().call_at(limit.at, _cancel, db, lease_over)
        try:
            async with _faults():
                yield
        except TimedOut:  # a statement cancelled: ours at the deadline, or the server's timeout
            if limit is not None and limit.passed():
                raise limit.error() from None
            raise
        finally:
            lease_over.set()
            if alarm is not None:
                alarm.cancel()


@contextlib.asynccontextmanager
async def _faults() -> AsyncIterator[None]:
    try:
        yield
    except psycopg.Error as err:
        fault = storage_fault(err)
        if fault is not None:
            raise fault from err
        raise


def _cancel(db: Raw, lease_over: asyncio.Event) -> None:
    """A request's deadline passed: stop what `db` runs until the request lets it go."""
    task = asyncio.ensure_future(_cancelling(db, lease_over))
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


async def _cancelling(db: Raw, lease_over: asyncio.Event) -> None:
    # Again and again: a cancel that reaches the server between two statements stops neither.
    while not lease_over.is_set():
        await db.cancel_safe(timeout=5.0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.05):
                await lease_over.wait()


async def _configure(db: Raw) -> None:
    # jsonb comes back as its text, as the shared SQL's rows expect (smemd.store.sql.rows).
    db.adapters.register_loader("jsonb", TextLoader)
