"""Index files on disk, saved so that a crash at any moment leaves a set that loads whole or one
that is refused, never a mix.

A save writes a new generation of every file (`name.<generation>`), flushes each to disk, and
only then replaces the header (`header.json`, written aside and renamed over): the header names
the generation and each file's size and CRC-32, so a load checks every byte it trusts. Files of
older generations are removed after the header names the new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

HEADER = "header.json"
FORMAT = 1
_CHUNK = 1 << 22


class IndexFileError(Exception):
    """A saved index that must not be trusted: missing, torn, corrupt, or of another format."""


def save(
    directory: Path, writers: Mapping[str, Callable[[Path], None]], meta: Mapping[str, Any]
) -> None:
    """Each writer writes its file to the path it is given; `meta` goes into the header."""
    directory.mkdir(parents=True, exist_ok=True)
    generation = _generation(directory) + 1
    files = {}
    for name, write in writers.items():
        path = directory / f"{name}.{generation}"
        write(path)
        _fsync(path)
        files[name] = {"size": path.stat().st_size, "crc32": _crc32(path)}
    header = {"format": FORMAT, "generation": generation, "files": files, "meta": dict(meta)}
    aside = directory / f"{HEADER}.tmp"
    aside.write_text(json.dumps(header))
    _fsync(aside)
    os.replace(aside, directory / HEADER)
    _fsync(directory)
    for stale in directory.iterdir():
        name, _, suffix = stale.name.rpartition(".")
        if suffix.isdigit() and int(suffix) != generation and name in writers:
            stale.unlink(missing_ok=True)


def load(directory: Path, names: Collection[str]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The header's meta and each named file's path, every file checked; else IndexFileError."""
    try:
        header = json.loads((directory / HEADER).read_text())
        if header.get("format") != FORMAT:
            raise IndexFileError(f"index format {header.get('format')!r}, not {FORMAT}")
        generation = int(header["generation"])
        paths = {}
        for name in names:
            expected = header["files"][name]
            path = directory / f"{name}.{generation}"
            if path.stat().st_size != expected["size"] or _crc32(path) != expected["crc32"]:
                raise IndexFileError(f"{path.name}: size or checksum differs from the header")
            paths[name] = path
        return dict(header["meta"]), paths
    except IndexFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise IndexFileError(f"{directory}: {type(err).__name__}: {err}") from err


def remove(directory: Path) -> None:
    if directory.is_dir():
        for path in directory.iterdir():
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            directory.rmdir()


def _generation(directory: Path) -> int:
    try:
        return int(json.loads((directory / HEADER).read_text())["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
