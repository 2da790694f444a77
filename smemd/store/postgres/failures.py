"""PostgreSQL's faults as errors a client can act on, and the refusals at start that no retry
cures (a wrong password, no `vector` extension, a server too old), each said in one sentence.

A lost or refused connection, a server shutting down or out of connections is the store being
unavailable (503, try again); a full disk is 507; a statement cancelled (the request's deadline,
or `[store] statement-timeout-s`) is a timeout. Anything else psycopg raises is a bug or a
constraint and stays what it is.
"""

from __future__ import annotations

import re

import psycopg
import psycopg_pool
from psycopg import errors as pg

from smemd.errors import (
    BadRequest,
    SmemError,
    StorageFull,
    StorageUnavailable,
    TimedOut,
    Unavailable,
)
from smemd.store.refusal import StoreRefused as Refused

# The oldest server the schema is written for (identity columns, `RETURN` function bodies).
OLDEST_SERVER = 140000
RETRY_AFTER_S = 5  # a server away is usually back, or failed over, within seconds


def storage_fault(err: BaseException) -> SmemError | None:
    """The client-facing error for a storage fault, or None when `err` is not one; one that
    passes (the server away, a statement cancelled) says when to come back."""
    fault = _fault(err)
    if isinstance(fault, Unavailable) and fault.retry_after is None:
        fault.retry_after = RETRY_AFTER_S
    return fault


def _fault(err: BaseException) -> SmemError | None:
    if isinstance(err, pg.DiskFull):
        return StorageFull("storage full", "no space left for the store; nothing was written")
    if isinstance(err, pg.QueryCanceled):
        return TimedOut("store query took too long", "the database cancelled it; try again")
    if isinstance(err, pg.CharacterNotInRepertoire | pg.UntranslatableCharacter) or (
        type(err) is psycopg.DataError and "NUL" in str(err)  # refused before it was sent
    ):
        return BadRequest("text the store cannot hold", f"{_first_line(err)}; nothing was written")
    if isinstance(err, pg.ReadOnlySqlTransaction):
        return StorageUnavailable("storage unavailable", "the database is read-only (a standby?)")
    if isinstance(err, psycopg.OperationalError | psycopg_pool.PoolTimeout):
        return StorageUnavailable("storage unavailable", _first_line(err))
    if isinstance(err, psycopg.InterfaceError) and "closed" in str(err):
        return StorageUnavailable("storage unavailable", "the connection to the database closed")
    return None


def refusal(err: BaseException) -> Refused | None:
    """The sentence for a fault at start that trying again will not cure, or None.

    A refusal while connecting carries no SQLSTATE (libpq reports only the server's message),
    so those are told apart by the server's words: English, the default of `lc_messages`. Any
    other language is taken for a server that cannot be reached (exit 1, not 2).
    """
    if isinstance(err, pg.InsufficientPrivilege):
        return Refused(f"the store's role may not do what smem needs: {_first_line(err)}")
    if isinstance(err, psycopg.ProgrammingError) and "invalid dsn" in str(err).lower():
        # psycopg's message quotes the dsn, password and all: it is not repeated.
        return Refused("the store's dsn is not a valid PostgreSQL connection string")
    if not isinstance(err, psycopg.OperationalError):
        return None
    said = str(err)
    for words, sentence in _CONNECT_REFUSALS:
        if re.search(words, said):
            return Refused(f"{sentence}: {said[said.find('FATAL:') :].strip() or said}")
    return None


_CONNECT_REFUSALS = (
    (r"password authentication failed", "PostgreSQL refused the password for the store's role"),
    (r'role "[^"]*" does not exist', "the store's role does not exist on the server"),
    (r'database "[^"]*" does not exist', "the store's database does not exist"),
    (r"no pg_hba\.conf entry", "PostgreSQL's pg_hba.conf admits no such connection"),
    (r"permission denied for database", "the store's role may not connect to its database"),
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
