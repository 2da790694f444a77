"""Files written to stay: their digests taken as they are synced, and directory syncs that make
a new name (a rename, a created file) survive a power cut. Used by the saved indexes and backups."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def digest(path: Path) -> str:
    with path.open("rb") as file:  # streamed: a graph is hundreds of megabytes
        return hashlib.file_digest(file, "blake2b").hexdigest()


def synced_digest(path: Path) -> str:
    with path.open("rb") as file:
        os.fsync(file.fileno())
        return hashlib.file_digest(file, "blake2b").hexdigest()


def sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
