"""The store the configuration names, built for the engine (which knows only the protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from smemd.store.protocol import Store
from smemd.store.refusal import StoreRefused

__all__ = ["DATABASE_NAME", "StoreKind", "StoreRefused", "configured_store"]

DATABASE_NAME = "smem.sqlite3"
# What `[store] kind` may name.
StoreKind = Literal["sqlite", "postgres"]


def configured_store(
    kind: StoreKind,
    state_dir: Path,
    *,
    dsn: str = "",
    pool_size: int = 10,
    statement_timeout_s: float = 60.0,
) -> Store:
    """The store `[store] kind` names (not yet opened: `Engine.start` opens it). Each backend is
    imported only when named: a SQLite daemon never loads PostgreSQL's driver."""
    if kind == "sqlite":
        from smemd.store.sqlite.store import SqliteStore

        return SqliteStore(state_dir / DATABASE_NAME)
    if kind == "postgres":
        from smemd.store.postgres.store import PostgresStore

        return PostgresStore(dsn, pool_size=pool_size, statement_timeout_s=statement_timeout_s)
    raise AssertionError(f"unknown store kind {kind!r}")  # the config's Literal refuses it
