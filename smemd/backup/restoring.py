"""Restoring a backup into a stopped daemon's state dir (`smemd --restore SRC`).

A backup is checked whole before anything is written: its manifest must be smem's, of a version
this smemd reads, and every file it names must be there with its size and digest (a damaged
backup is refused, never half restored). A state dir that holds a store already is refused
unless `replace` says to; the daemon's lock is taken, so a running smemd refuses it too. The
database goes in last, by one rename, after any WAL of the store it replaces is gone (SQLite
would otherwise replay the old store's log over the restored file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from smemd.durable import digest, sync_directory
from smemd.lock import StateLock
from smemd.paths import INDEX_DIR_NAME
from smemd.protocol.backups import BACKUP_FORMAT, BACKUP_VERSION, MANIFEST, Manifest
from smemd.store.opening import DATABASE_NAME


class BackupRefused(Exception):
    """A backup that cannot be restored, or a state dir it may not go into: one sentence."""


def check(source: Path) -> Manifest:
    """The backup's manifest, once every file it names has been checked."""
    try:
        raw = (source / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise BackupRefused(f"{source} is not a backup: it has no {MANIFEST}") from None
    except OSError as err:
        raise BackupRefused(f"cannot read {source / MANIFEST}: {err.strerror}") from err
    try:
        header = msgspec.json.decode(raw, type=dict[str, object])
    except msgspec.DecodeError as err:
        raise BackupRefused(f"{source / MANIFEST} is damaged: {err}") from err
    if header.get("format") != BACKUP_FORMAT:
        raise BackupRefused(f"{source} is not a smem backup")
    version = header.get("version")
    if not isinstance(version, int) or version > BACKUP_VERSION:
        raise BackupRefused(
            f"{source} is a backup of format {version!r}, newer than this smemd reads"
            f" ({BACKUP_VERSION}): restore it with the smem that wrote it, or a later one"
        )
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except msgspec.ValidationError as err:
        raise BackupRefused(f"{source / MANIFEST} is damaged: {err}") from err
    if manifest.store == "postgres":
        raise BackupRefused(
            f"{source} is a PostgreSQL store's backup: its namespaces' exports, each put back"
            " with `smemctl import FILE` (the database itself is its server's to back up)"
        )
    if DATABASE_NAME not in manifest.files:
        raise BackupRefused(f"{source} holds no database")
    for name, expected in manifest.files.items():
        path = source / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise BackupRefused(f"{source / MANIFEST} names a file outside the backup: {name}")
        if not path.is_file():
            raise BackupRefused(f"{source} is damaged: {name} is missing")
        if path.stat().st_size != expected.bytes or digest(path) != expected.blake2b:
            raise BackupRefused(f"{source} is damaged: {name} is not as it was written")
    return manifest


def restore(source: Path, state_dir: Path, *, replace: bool = False) -> Manifest:
    """Put the backup at `source` in `state_dir` (made if missing); its manifest."""
    manifest = check(source)
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = StateLock(state_dir)
    lock.acquire()  # AlreadyRunning while a daemon runs on it
    try:
        database = state_dir / DATABASE_NAME
        if database.exists() and not replace:
            raise BackupRefused(
                f"{state_dir} holds a store already: restore into an empty state dir, or say"
                " --replace to put the backup in its place"
            )
        incoming = state_dir / f"{DATABASE_NAME}.restoring"
        indexes = state_dir / INDEX_DIR_NAME
        staged = state_dir / f"{INDEX_DIR_NAME}.restoring"
        try:
            shutil.rmtree(staged, ignore_errors=True)
            shutil.copyfile(source / DATABASE_NAME, incoming)
            if (source / INDEX_DIR_NAME).is_dir():
                shutil.copytree(source / INDEX_DIR_NAME, staged)
            if digest(incoming) != manifest.files[DATABASE_NAME].blake2b:
                raise BackupRefused(f"the copy of {source / DATABASE_NAME} came out damaged")
        except BaseException:  # the state dir as it was
            incoming.unlink(missing_ok=True)
            shutil.rmtree(staged, ignore_errors=True)
            raise
        shutil.rmtree(indexes, ignore_errors=True)  # saved for the store being replaced
        if staged.exists():
            staged.rename(indexes)
        for log in (f"{DATABASE_NAME}-wal", f"{DATABASE_NAME}-shm"):
            (state_dir / log).unlink(missing_ok=True)
        incoming.rename(database)
        sync_directory(state_dir)
    finally:
        lock.release()
    return manifest
