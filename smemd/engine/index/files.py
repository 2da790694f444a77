"""Index files on disk, saved so that a crash at any moment leaves a set that loads whole or one
that is refused, never a mix. Used by the graph (saved.py) and the BM25 postings
(lexical_files.py).

A save writes each file under a name of its own (`graph.3f9a1c2e`) and fsyncs it, then writes
`header.json` under a temporary name, fsyncs it and the directory, and `os.replace`s it.
Replacing the header is the commit: before it, the old header names the old files, untouched;
after it, the new header names new files already on disk. Only then are the files no header
names removed. A load checks every file against the blake2b digest the header gives it, so a
torn or flipped file is refused. (A directory swap would leave, between its two renames, a
moment with no index at the path; POSIX has no portable atomic exchange of two directories.)
One writer per directory.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from smemd.durable import digest, sync_directory, synced_digest

HEADER = "header.json"
FORMAT = 1


class IndexFileError(Exception):
    """A saved index that must not be trusted: missing, torn, damaged, or of another format."""


def save(
    directory: Path, writers: Mapping[str, Callable[[Path], None]], meta: Mapping[str, Any]
) -> None:
    """Each writer writes its file to the path it is given; `meta` goes into the header."""
    directory.mkdir(parents=True, exist_ok=True)
    tag = secrets.token_hex(4)
    written: list[Path] = []
    try:
        entries = {}
        for name, write in writers.items():
            written.append(directory / f"{name}.{tag}")
            write(written[-1])
            entries[name] = {"file": written[-1].name, "blake2b": synced_digest(written[-1])}
        header = {"format": FORMAT, "files": entries, "meta": dict(meta)}
        written.append(directory / f"{HEADER}.tmp-{tag}")
        written[-1].write_text(json.dumps(header))  # no newline: a cut one fails to parse
        synced_digest(written[-1])
        sync_directory(directory)  # the new files' names are durable before a header names them
        os.replace(written[-1], directory / HEADER)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    sync_directory(directory)
    kept = {entry["file"] for entry in entries.values()}
    for path in directory.iterdir():  # earlier saves' files, and litter of interrupted ones
        stem = path.name.partition(".")[0]
        ours = stem in writers or path.name.startswith(f"{HEADER}.tmp-")
        if ours and path.name != HEADER and path.name not in kept:
            path.unlink(missing_ok=True)


def load(directory: Path, names: Collection[str]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The header's meta and each named file's path, every file checked; else IndexFileError."""
    try:
        header = json.loads((directory / HEADER).read_bytes())
        if header.get("format") != FORMAT:
            raise IndexFileError(f"format {header.get('format')!r}, not {FORMAT}")
        paths = {name: directory / header["files"][name]["file"] for name in names}
        # Hundreds of megabytes each: hashed side by side (hashlib lets go of the GIL).
        with ThreadPoolExecutor(max_workers=min(len(paths), os.cpu_count() or 1) or 1) as pool:
            digests = dict(zip(paths, pool.map(digest, paths.values()), strict=True))
        for name, path in paths.items():
            if digests[name] != header["files"][name]["blake2b"]:
                raise IndexFileError(f"{path.name}: checksum mismatch")
        return dict(header["meta"]), paths
    except IndexFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise IndexFileError(f"index files in {directory}: {err!r}") from err
