"""Connections: one writer (every write under BEGIN IMMEDIATE) and two pools of read-only readers.

Reads never wait on a long ingest transaction: WAL lets readers see the last commit while the
writer works. Reads come in two kinds, each with its own connections, so that one cannot starve
the other:

* `read()`: lookups by key and pages of an index, cheap whatever the store's size (hydrating a
  search's hits, a document, a version chain);
* `scan(namespace)`: reads whose cost grows with a namespace (a filter tested on every row, a
  count, a list page). At most one runs per namespace at a time, so one namespace's expensive
  requests queue behind each other and leave the other scan connection to everyone else.

Under a request's deadline (smemd.store.deadline) waiting for a connection ends at the deadline,
and a query running then, or begun after it on the same lease, is interrupted
(`sqlite3_interrupt`): it answers TimedOut. A reader whose lease is cut (its holder cancelled,
or a read transaction left open) is stopped, closed and replaced by a new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import aiosqlite

from smemd.errors import StorageFull, StorageUnavailable
from smemd.store import deadline
from smemd.store.records import NamespaceSize
from smemd.store.sqlite.failures import storage_fault
from smemd.store.sqlite.schema import migrate
from smemd.store.turns import NamespaceTurns

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    # NORMAL in WAL mode loses at most the last commits on power loss, never integrity.
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 5000",
)
# Per namespace, also one without documents or memories: what a backup's manifest counts.
SIZES = """
SELECT n.name,
    (SELECT count(*) FROM documents d WHERE d.namespace = n.name),
    (SELECT count(*) FROM memories m WHERE m.namespace = n.name)
FROM namespaces n ORDER BY n.name
"""
Pool = asyncio.Queue[aiosqlite.Connection]
log = logging.getLogger("smemd.store")


class Database:
    def __init__(self, path: Path, readers: int = 2, scanners: int = 2) -> None:
        self.path = path
        self._sizes = (readers, scanners)
        self._writer: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self._readers: Pool = asyncio.Queue()
        self._scanners: Pool = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []
        self._scanning = NamespaceTurns()
        self._chores: set[asyncio.Task[None]] = set()  # interrupts and connections coming back
        self._closing = False

    async def open(self) -> list[str]:
        """Open, migrate and return the migrations applied now; any SQLite error on the way is
        the store's StorageFull or StorageUnavailable."""
        try:
            return await self._open()
        except sqlite3.Error as err:
            await self.close()
            fault = storage_fault(err)
            raise fault or StorageUnavailable("storage unavailable", str(err)) from err

    async def _open(self) -> list[str]:
        self._closing = False
        self._writer = await aiosqlite.connect(self.path, isolation_level=None)
        for pragma in PRAGMAS:
            # Fetched to the end: a statement left with a row pending stays active, and an
            # active statement keeps an interrupt in force for every statement after it.
            await self._writer.execute_fetchall(pragma)
        applied = await migrate(self._writer)
        for pool, size in zip((self._readers, self._scanners), self._sizes, strict=True):
            for _ in range(size):
                pool.put_nowait(await self._connect_reader())
        return applied

    async def _connect_reader(self) -> aiosqlite.Connection:
        reader = await aiosqlite.connect(self._read_only_uri, uri=True, isolation_level=None)
        self._all_readers.append(reader)  # from now on, `close` closes it
        await reader.execute_fetchall("PRAGMA busy_timeout = 5000")
        return reader

    @property
    def _read_only_uri(self) -> str:
        return f"file:{urllib.parse.quote(str(self.path))}?mode=ro"

    async def close(self) -> None:
        """Close every connection. Each has a thread of its own that the process waits for at
        its exit, so none may be missed: no chore starts once closing has begun (a reader's
        replacement would take it out of the list being closed and open one that nothing
        closes)."""
        self._closing = True
        chores = list(self._chores)
        for chore in chores:
            chore.cancel()
        await asyncio.gather(*chores, return_exceptions=True)
        connections, self._all_readers = self._all_readers, []
        if self._writer is not None:
            connections.append(self._writer)
            self._writer = None
        for connection in connections:
            try:
                await connection.close()
            except sqlite3.Error as err:  # its thread is stopped all the same
                log.error("store: cannot close a connection: %s", err)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One transaction on the writer; committed on exit, rolled back on any exception.

        Only the wait for the writer is bounded by a deadline: once begun, a transaction runs
        to its commit or rollback, so a request that times out has written nothing.
        """
        writer = self._writer
        assert writer is not None, "database is not open"
        await deadline.waiting(self._write_lock.acquire())
        try:
            try:
                await writer.execute("BEGIN IMMEDIATE")
                yield writer
                await writer.execute("COMMIT")
            except BaseException as err:
                # Also after a failed COMMIT: on a full disk SQLite may leave the transaction
                # open, and every later BEGIN would fail.
                await self._roll_back(writer)
                fault = storage_fault(err)
                if fault is not None:
                    raise fault from err
                raise
        finally:
            self._write_lock.release()

    @staticmethod
    async def _roll_back(writer: aiosqlite.Connection) -> None:
        if not writer.in_transaction:
            return
        try:
            await writer.execute("ROLLBACK")
        except sqlite3.Error as err:  # what failed the transaction may fail this too
            log.error("store: cannot roll back: %s", err)

    async def snapshot(self, into: Path) -> list[NamespaceSize]:
        """`VACUUM INTO` a new file: one read transaction, so one moment, and in WAL mode the
        writer goes on meanwhile. On a connection of its own, so searches keep their readers.
        The sizes are counted in the new file, so they are of the same moment."""
        try:
            async with aiosqlite.connect(
                self._read_only_uri, uri=True, isolation_level=None
            ) as reader:
                await reader.execute_fetchall("PRAGMA busy_timeout = 5000")
                await reader.execute_fetchall("VACUUM INTO ?", [str(into)])
            written = f"file:{urllib.parse.quote(str(into))}?mode=ro"
            async with aiosqlite.connect(written, uri=True) as copy:
                rows = await copy.execute_fetchall(SIZES)
            return [NamespaceSize(namespace=n, documents=d, memories=m) for n, d, m in rows]
        except sqlite3.Error as err:
            if "full" in str(err):
                raise StorageFull(
                    "no space for the backup", f"{into.parent}: {err}; the store is untouched"
                ) from err
            fault = storage_fault(err)
            raise fault or StorageUnavailable("cannot back the store up", str(err)) from err

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A reader for lookups whose cost does not grow with the store."""
        async with self._lease(self._readers) as reader:
            yield reader

    @contextlib.asynccontextmanager
    async def scan(self, namespace: str) -> AsyncIterator[aiosqlite.Connection]:
        """A reader for work that walks a namespace; one per namespace at a time."""
        async with self._scanning.of(namespace), self._lease(self._scanners) as reader:
            yield reader

    @contextlib.asynccontextmanager
    async def _lease(self, pool: Pool) -> AsyncIterator[aiosqlite.Connection]:
        limit = deadline.current()
        reader = await deadline.waiting(pool.get())
        alarm, lease_over = None, asyncio.Event()
        if limit is not None:
            alarm = asyncio.get_running_loop().call_at(
                limit.at, self._interrupt, reader, lease_over
            )
        idle = True
        try:
            yield reader
        except sqlite3.Error as err:
            if limit is not None and limit.passed() and "interrupt" in str(err):
                raise limit.error() from None
            fault = storage_fault(err)
            if fault is not None:
                raise fault from err
            raise
        except BaseException:
            # Cancelled while awaiting: the query may still be running in the reader's thread.
            idle = False
            raise
        finally:
            lease_over.set()
            if alarm is not None:
                alarm.cancel()
            if idle and reader.in_transaction:
                # A read transaction (an export's one moment) its end never reached: the next
                # user would see that old moment forever.
                idle = False
            if idle:
                pool.put_nowait(reader)
            else:
                self._chore(self._replace(reader, pool))

    def _interrupt(self, reader: aiosqlite.Connection, lease_over: asyncio.Event) -> None:
        self._chore(self._interrupting(reader, lease_over))

    @staticmethod
    async def _interrupting(reader: aiosqlite.Connection, lease_over: asyncio.Event) -> None:
        """Interrupt the reader until its lease ends: an interrupt that falls between two
        statements stops neither, so the holder's next statement must be stopped too."""
        while not lease_over.is_set():
            await reader.interrupt()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.02):
                    await lease_over.wait()

    async def _replace(self, reader: aiosqlite.Connection, pool: Pool) -> None:
        """Stop what the reader still runs, close it, and give the pool a new connection in
        its place. A reader whose lease was cut is never used again: a call it finished for a
        caller that had gone may leave a statement open on it that nothing resets (aiosqlite's
        thread keeps the last result it handed over, here a cursor with rows left), and while a
        statement is open every interrupt stays in force: each later query on it would fail,
        `interrupted`, for as long as the daemon runs."""
        self._all_readers.remove(reader)  # closed here, not by `close`
        closing = asyncio.ensure_future(reader.close())  # queued behind what it runs
        try:
            while not closing.done():
                with contextlib.suppress(ValueError):  # closed meanwhile
                    await reader.interrupt()
                await asyncio.wait({closing}, timeout=0.05)
        finally:  # also when the store closes meanwhile: the close goes on, unhindered
            if not closing.done():
                with contextlib.suppress(ValueError):
                    await reader.interrupt()
        with contextlib.suppress(Exception):
            closing.result()
        pause = 0.1
        while True:
            try:
                fresh = await self._connect_reader()
            except sqlite3.Error as err:  # a failing disk: the pool is one short until it opens
                log.warning("store: cannot open a reader: %s; again in %.1f s", err, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 5.0)
            else:
                pool.put_nowait(fresh)
                return

    def _chore(self, work: Coroutine[Any, Any, None]) -> None:
        if self._closing:  # the connection it is about is closed with the rest
            work.close()
            return
        task = asyncio.create_task(work)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)
