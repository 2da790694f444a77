"""A backup as it lies on disk and as `POST /v1/backup` answers: its manifest.

A backup is a directory: the database as of one moment (`smem.sqlite3`), the saved index files
that were whole then (`indexes/…`, rebuilt from the database where missing), the config with its
secrets masked (`config.toml`) and `manifest.json`, written last, naming every other file with its
size and blake2b digest. A directory without a manifest is not a backup.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from smemd.protocol import Reply, Request

BACKUP_FORMAT: Literal["smem-backup"] = "smem-backup"
BACKUP_VERSION = 1  # a restore refuses a backup of a later version
MANIFEST = "manifest.json"


class BackedUpFile(Reply):
    bytes: int
    blake2b: str


class NamespaceCounts(Reply):
    documents: int
    memories: int  # every version, forgotten ones too


class Manifest(Reply):
    format: Literal["smem-backup"]
    version: int
    smem_version: str
    created_at: str  # ISO 8601, UTC: the moment the database was read at
    store: str  # the kind of store backed up
    namespaces: dict[str, NamespaceCounts]
    files: dict[str, BackedUpFile]  # by path inside the backup, "/"-separated


class BackupRequest(Request):
    to: str  # a directory that does not exist yet (or is empty), on the daemon's host


class BackupReply(Reply):
    path: str
    bytes: int
    seconds: float
    manifest: Manifest


def encode_manifest(manifest: Manifest) -> bytes:
    return msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"
