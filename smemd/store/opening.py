"""The store the configuration names, built for the engine (which knows only the protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from smemd.store.protocol import Store
from smemd.store.sqlite.store import SqliteStore

DATABASE_NAME = "smem.sqlite3"
# What `[store] kind` may name.
StoreKind = Literal["sqlite"]


def configured_store(kind: StoreKind, state_dir: Path) -> Store:
    """The store `[store] kind` names (not yet opened: `Engine.start` opens it)."""
    if kind == "sqlite":
        return SqliteStore(state_dir / DATABASE_NAME)
    raise AssertionError(f"unknown store kind {kind!r}")  # the config's Literal refuses it
