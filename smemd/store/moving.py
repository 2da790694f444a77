"""`smemctl store copy`: a stopped daemon's store, whole, into a new one of either backend.

The source is the store a daemon's config names; the target a PostgreSQL dsn (`postgresql://…`,
`postgres://…` or libpq's `key=value` form) or the path of a SQLite file that does not exist yet.
The source's daemons must be stopped: its state dir's lock (SQLite), or the database alone
(PostgreSQL: refused while any daemon has it open), is taken for the copy. A copy that fails
leaves the target as empty as it found it (and a SQLite target not there at all).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from smemd.lock import StateLock
from smemd.store.opening import DATABASE_NAME, StoreKind
from smemd.store.postgres.store import PostgresStore
from smemd.store.sql.copying import Copied, copy_store
from smemd.store.sqlite.store import SqliteStore


def target_kind(target: str) -> StoreKind:
    """What a `--to` names: a PostgreSQL dsn, else a SQLite file's path."""
    if target.startswith(("postgresql://", "postgres://")) or "=" in target:
        return "postgres"
    return "sqlite"


async def copy_to(kind: StoreKind, state_dir: Path, dsn: str, target: str) -> Copied:
    """Copy the configured store (`kind`, `state_dir`, `dsn`) into `target`. Raises the
    source's or target's refusal (a running daemon, a non-empty target) as it comes."""
    into = target_kind(target)
    made: Path | None = None
    if into == "sqlite":
        made = Path(target)
        if made.exists():
            raise FileExistsError(f"{made} exists: a copy goes into a new file")
    with contextlib.ExitStack() as stack:
        lock = StateLock(state_dir)
        lock.acquire()  # AlreadyRunning while the daemon runs
        stack.callback(lock.release)
        source = _store(kind, state_dir / DATABASE_NAME, dsn)
        destination = _store(into, made or Path(), target)
        try:
            await source.open()
            try:
                await destination.open()
                try:
                    return await copy_store(source, destination)
                finally:
                    await destination.close()
            finally:
                await source.close()
        except BaseException:
            if made is not None:
                for leftover in (made, *(Path(f"{made}{end}") for end in ("-wal", "-shm"))):
                    leftover.unlink(missing_ok=True)
            raise
    raise AssertionError("unreachable")  # for the type checker: the block returns or raises


def _store(kind: StoreKind, path: Path, dsn: str) -> SqliteStore | PostgresStore:
    return PostgresStore(dsn, exclusive=True) if kind == "postgres" else SqliteStore(path)
