"""Writing a backup while smemd serves (`POST /v1/backup`, `smemctl backup DEST`).

The database is read at one moment by the store's `snapshot`; writes go on meanwhile. (A
PostgreSQL store is its server's to back up, with pg_dump or base backups; what smem writes for
it is every namespace's export, `exports/NS.jsonl.gz`, each as of its own moment, which
`smemctl import` puts back into any store.) The saved index files are copied as their headers named them then (a header names files that are written
once and never changed, smemd.engine.index.files); a set replaced while it was being copied is
left out, and the restored daemon builds it from the database, as it would any stale index.

Everything is written into `DEST.partial` and renamed to DEST once the manifest is in it, so a
DEST that exists is a whole backup. The state dir notes the partial directory while it is
written: a daemon killed meanwhile removes it at its next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import json
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from smemd import __version__
from smemd.durable import sync_directory, synced_digest
from smemd.errors import BadRequest, Conflict, SmemError, StorageFull
from smemd.paths import INDEX_DIR_NAME
from smemd.protocol.backups import (
    BACKUP_FORMAT,
    BACKUP_VERSION,
    MANIFEST,
    BackedUpFile,
    BackupReply,
    Manifest,
    NamespaceCounts,
    encode_manifest,
)
from smemd.protocol.exports import Trailer
from smemd.store.opening import DATABASE_NAME
from smemd.store.protocol import Store
from smemd.store.records import NamespaceSize

log = logging.getLogger("smemd.backup")
PARTIAL_NOTE = "backup.partial"  # in the state dir: the partial directory being written
CONFIG_FILE = "config.toml"
EXPORTS_DIR = "exports"  # a PostgreSQL store's backup: one export per namespace
PAGE = 500
ExportLines = Callable[[str], AsyncIterator[bytes]]


class Backups:
    """The backups of one daemon's store and state dir (the engine owns one)."""

    def __init__(self, store: Store, state_dir: Path, export: ExportLines) -> None:
        """`export` gives a namespace's export lines (smemd.engine.exporting)."""
        self.store = store
        self.state_dir = state_dir
        self.export = export

    async def write(self, config_text: str, destination: Path) -> BackupReply:
        """Back the store up into `destination`, a directory not there yet (or empty), with
        `config_text` (the config, its secrets masked) beside it."""
        began = time.monotonic()
        partial = await asyncio.to_thread(_begin, self.state_dir, destination)
        try:
            if self.store.kind == "postgres":
                sizes = await self._export_all(partial / EXPORTS_DIR)
            else:
                sizes = await self.store.snapshot(partial / DATABASE_NAME)
            created = datetime.now(UTC).isoformat(timespec="seconds")
            manifest = await asyncio.to_thread(
                _finish, self.store.kind, self.state_dir, config_text, partial, created, sizes
            )
            await asyncio.to_thread(_publish, partial, destination)
        except BaseException as err:
            shutil.rmtree(partial, ignore_errors=True)
            if isinstance(err, OSError):
                raise _disk_error(err, destination) from err
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.state_dir / PARTIAL_NOTE)
        size = sum(f.bytes for f in manifest.files.values())
        seconds = time.monotonic() - began
        log.info("backup of %d bytes to %s in %.1f s", size, destination, seconds)
        return BackupReply(
            path=str(destination), bytes=size, seconds=round(seconds, 3), manifest=manifest
        )

    async def _export_all(self, into: Path) -> list[NamespaceSize]:
        """Every namespace's export into `into`, gzip'd; their sizes, as their trailers count."""
        await asyncio.to_thread(into.mkdir)
        sizes: list[NamespaceSize] = []
        while True:
            async with self.store.read() as reader:
                page = await reader.namespaces(limit=PAGE, offset=len(sizes))
            for namespace in page:
                last = b""
                with await asyncio.to_thread(
                    gzip.open, into / f"{namespace.name}.jsonl.gz", "wb"
                ) as out:
                    async for block in self.export(namespace.name):
                        await asyncio.to_thread(out.write, block)
                        last = block
                counts = msgspec.json.decode(
                    last.rstrip(b"\n").rsplit(b"\n", 1)[-1], type=Trailer
                ).records
                sizes.append(NamespaceSize(
                    namespace=namespace.name, documents=counts.get("document", 0),
                    memories=counts.get("memory", 0),
                ))  # fmt: skip
            if len(page) < PAGE:
                return sizes


def _begin(state_dir: Path, destination: Path) -> Path:
    """The partial directory to write into, noted in the state dir; one backup at a time."""
    if "\x00" in str(destination):
        raise BadRequest("a path cannot hold a NUL character", "name the backup's directory")
    try:
        return _noted_partial(state_dir, destination)
    except OSError as err:  # a name too long, a directory it may not look into
        raise _disk_error(err, destination) from err


def _noted_partial(state_dir: Path, destination: Path) -> Path:
    if not destination.is_absolute():
        raise BadRequest("a backup goes to an absolute path", f"{destination} is relative")
    if destination.exists() and not (destination.is_dir() and not any(destination.iterdir())):
        raise Conflict("the backup's destination exists", f"{destination} is not an empty dir")
    if not destination.parent.is_dir():
        raise BadRequest("no such directory", f"{destination.parent} does not exist")
    partial = destination.with_name(destination.name + ".partial")
    try:
        with (state_dir / PARTIAL_NOTE).open("x") as noted:
            noted.write(str(partial))
    except FileExistsError:
        raise Conflict("a backup is being written", "try again when it is done") from None
    try:
        if partial.exists():  # an earlier backup to the same place, cut off
            shutil.rmtree(partial)
        partial.mkdir()
    except OSError as err:
        (state_dir / PARTIAL_NOTE).unlink(missing_ok=True)
        raise _disk_error(err, destination) from err
    return partial


def _publish(partial: Path, destination: Path) -> None:
    if destination.exists():
        destination.rmdir()  # empty: checked before
    os.replace(partial, destination)
    sync_directory(destination.parent)


def clear_interrupted(state_dir: Path) -> None:
    """Remove what a backup cut off by a kill left (at start, before anything else runs)."""
    note = state_dir / PARTIAL_NOTE
    try:
        partial = Path(note.read_text())
    except FileNotFoundError:
        return
    if partial.name.endswith(".partial") and not (partial / MANIFEST).exists():
        shutil.rmtree(partial, ignore_errors=True)
        log.warning("removed %s, a backup cut off before it was whole", partial)
    note.unlink(missing_ok=True)


def _finish(
    kind: str,
    state_dir: Path,
    config_text: str,
    into: Path,
    created: str,
    sizes: list[NamespaceSize],
) -> Manifest:
    """The index files, the config and the manifest; blocking work, run in a thread."""
    _copy_indexes(state_dir / INDEX_DIR_NAME, into / INDEX_DIR_NAME)
    (into / CONFIG_FILE).write_text(config_text)
    files: dict[str, BackedUpFile] = {}
    for path in sorted(p for p in into.rglob("*") if p.is_file()):
        name = path.relative_to(into).as_posix()
        files[name] = BackedUpFile(bytes=path.stat().st_size, blake2b=synced_digest(path))
    manifest = Manifest(
        format=BACKUP_FORMAT,
        version=BACKUP_VERSION,
        smem_version=__version__,
        created_at=created,
        store=kind,
        namespaces={
            size.namespace: NamespaceCounts(documents=size.documents, memories=size.memories)
            for size in sizes
        },
        files=files,
    )
    temporary = into / f"{MANIFEST}.tmp"
    temporary.write_bytes(encode_manifest(manifest))
    with temporary.open("rb") as written:
        os.fsync(written.fileno())
    os.replace(temporary, into / MANIFEST)
    for directory in {p.parent for p in into.rglob("*")} | {into}:
        sync_directory(directory)
    return manifest


def _copy_indexes(source: Path, target: Path) -> None:
    """Every index set whose header and files could all be copied as one save left them."""
    for header in sorted(source.rglob("header.json")) if source.is_dir() else []:
        folder = header.parent
        try:
            text = header.read_bytes()
            named = [entry["file"] for entry in json.loads(text)["files"].values()]
            copy = target / folder.relative_to(source)
            copy.mkdir(parents=True, exist_ok=True)
            for name in named:
                shutil.copyfile(folder / name, copy / name)
            (copy / "header.json").write_bytes(text)
        # Saved anew meanwhile (or a header no load would trust): the restored daemon builds
        # that index from the database.
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            shutil.rmtree(target / folder.relative_to(source), ignore_errors=True)


def _disk_error(err: OSError, destination: Path) -> SmemError:
    if err.errno == errno.ENOSPC:
        return StorageFull("no space for the backup", f"{destination.parent}: nothing was kept")
    return BadRequest("cannot write the backup", f"{destination}: {err.strerror or err}")
