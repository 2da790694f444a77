"""SQLite's storage faults as errors a client can act on: a full disk, a read-only or failing one.

SQLite reports them as OperationalError with a result code; everything else it raises is a bug
or a constraint, and stays what it is.
"""

from __future__ import annotations

import sqlite3

from smemd.errors import SmemError, StorageFull, StorageUnavailable

# Primary result codes (the low byte of an extended one, such as SQLITE_IOERR_WRITE).
SQLITE_READONLY, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN = 8, 10, 11, 13, 14
_UNAVAILABLE = {
    SQLITE_READONLY: "the store is read-only",
    SQLITE_IOERR: "the store's disk failed to read or write",
    SQLITE_CORRUPT: "the store's file is damaged",
    SQLITE_CANTOPEN: "the store's files cannot be opened",
}


def storage_fault(err: BaseException) -> SmemError | None:
    """The client-facing error for a storage fault, or None when `err` is not one."""
    if not isinstance(err, sqlite3.Error):
        return None
    code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
    if code == SQLITE_FULL:
        return StorageFull("storage full", "no space left for the store; nothing was written")
    if code in _UNAVAILABLE:
        return StorageUnavailable("storage unavailable", f"{_UNAVAILABLE[code]}: {err}")
    return None
