"""A lexical index on disk: its arrays as `.npy` files and its terms as UTF-8 lines, named by a
JSON header that holds their blake2b digests.

A save writes each data file under a name of its own (`rows.3f9a1c2e.npy`) and fsyncs it, then
writes `header.json` under a temporary name, fsyncs it, `os.replace`s it and fsyncs the
directory. Replacing the header is the commit: before it, the old header names the old files,
still untouched; after it, the new header names new files already on disk. Only then are files
no header names removed. A crash at any point leaves the old set or the new set, and a torn or
flipped file fails its digest. (A directory swap would leave, between its two renames, a moment
with no index at the path at all; POSIX has no portable atomic exchange of two directories.)
One writer per directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

VERSION = 1
HEADER = "header.json"
ARRAYS = {
    "keys": np.dtype(np.int64),
    "live": np.dtype(np.bool_),
    "length": np.dtype(np.float32),
    "start": np.dtype(np.int64),
    "rows": np.dtype(np.int32),
    "tf": np.dtype(np.float32),
}


class IndexFileError(Exception):
    """A saved lexical index that is missing, of another format version, or damaged."""


@dataclass(frozen=True, slots=True)
class Postings:
    """One index's compacted state: per row `keys`, `live`, `length`; term t's postings are
    `rows[start[t]:start[t + 1]]` and `tf` alike, t numbering `terms`."""

    keys: np.ndarray
    live: np.ndarray
    length: np.ndarray
    start: np.ndarray
    rows: np.ndarray
    tf: np.ndarray
    terms: list[str]


def write(directory: Path, postings: Postings) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tag = secrets.token_hex(4)
    terms = "\n".join(postings.terms)
    if terms.count("\n") != max(len(postings.terms) - 1, 0):  # no code point makes one in tokens()
        raise ValueError("a term holds a newline")
    written: list[Path] = []
    try:
        files: dict[str, dict[str, str]] = {}
        for name, dtype in ARRAYS.items():
            array = np.ascontiguousarray(getattr(postings, name), dtype=dtype)
            written.append(directory / f"{name}.{tag}.npy")
            with written[-1].open("wb") as file:
                np.save(file, array, allow_pickle=False)
            files[name] = {"file": written[-1].name, "blake2b": _synced_digest(written[-1])}
        written.append(directory / f"terms.{tag}.txt")
        written[-1].write_bytes(terms.encode())
        files["terms"] = {"file": written[-1].name, "blake2b": _synced_digest(written[-1])}
        header = {
            "version": VERSION,
            "rows": int(postings.keys.size),
            "max_key": int(postings.keys.max()) if postings.keys.size else None,
            "terms": len(postings.terms),
            "postings": int(postings.rows.size),
            "files": files,
        }
        written.append(directory / f"{HEADER}.tmp-{tag}")
        written[-1].write_text(json.dumps(header, indent=1))  # no newline: a cut one fails
        _synced_digest(written[-1])
        _sync_directory(directory)  # the new files' names are durable before a header names them
        os.replace(written[-1], directory / HEADER)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    _sync_directory(directory)
    kept = {entry["file"] for entry in files.values()}
    for path in directory.iterdir():  # earlier saves' files, and litter of interrupted ones
        if _is_ours(path.name) and path.name not in kept:
            path.unlink(missing_ok=True)


def read(directory: Path) -> Postings:
    """The postings last saved in `directory`, whole and checked, or `IndexFileError`."""
    try:
        return _read(directory)
    except (IndexFileError, OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise IndexFileError(f"lexical index in {directory}: {err!r}") from err


def _read(directory: Path) -> Postings:
    header = json.loads((directory / HEADER).read_bytes())
    if header.get("version") != VERSION:
        raise IndexFileError(f"format version {header.get('version')!r}, not {VERSION}")
    files = header["files"]
    arrays = {name: _read_array(directory, files[name], dtype) for name, dtype in ARRAYS.items()}
    terms = _read_checked(directory, files["terms"])
    postings = Postings(**arrays, terms=terms.decode().split("\n") if terms else [])
    _check(postings, header)
    return postings


def _check(postings: Postings, header: dict[str, Any]) -> None:
    """Shapes and values the index relies on, each against the header or the other arrays."""
    rows, terms, count = header["rows"], header["terms"], header["postings"]
    shapes = {
        "keys": rows, "live": rows, "length": rows, "start": terms + 1, "rows": count, "tf": count
    }  # fmt: skip
    for name, size in shapes.items():
        if getattr(postings, name).shape != (size,):
            raise IndexFileError(f"{name}: shape {getattr(postings, name).shape}, not ({size},)")
    if len(postings.terms) != terms:
        raise IndexFileError(f"{len(postings.terms)} terms, not {terms}")
    start, keys = postings.start, postings.keys
    if start[0] != 0 or start[-1] != count or np.any(np.diff(start) < 0):
        raise IndexFileError("term slices out of order")
    if count and (postings.rows.min() < 0 or postings.rows.max() >= rows):
        raise IndexFileError("a posting names no row")
    max_key = int(keys.max()) if rows else None
    if max_key != header["max_key"] or (rows and (keys.min() < 0 or np.unique(keys).size < rows)):
        raise IndexFileError(f"keys do not match the header (max {max_key})")


def _read_array(directory: Path, entry: dict[str, str], dtype: np.dtype) -> np.ndarray:
    path = _checked_path(directory, entry)
    array = np.load(path, allow_pickle=False)  # the file is the one digested just before
    if array.dtype != dtype or array.ndim != 1:
        raise IndexFileError(f"{path.name}: {array.dtype} of {array.ndim} dimensions")
    return array


def _read_checked(directory: Path, entry: dict[str, str]) -> bytes:
    path = directory / entry["file"]
    data = path.read_bytes()
    if hashlib.blake2b(data).hexdigest() != entry["blake2b"]:
        raise IndexFileError(f"{path.name}: checksum mismatch")
    return data


def _checked_path(directory: Path, entry: dict[str, str]) -> Path:
    path = directory / entry["file"]
    with path.open("rb") as file:  # streamed: the postings files are the large ones
        if hashlib.file_digest(file, "blake2b").hexdigest() != entry["blake2b"]:
            raise IndexFileError(f"{path.name}: checksum mismatch")
    return path


def _synced_digest(path: Path) -> str:
    with path.open("rb") as file:
        os.fsync(file.fileno())
        return hashlib.file_digest(file, "blake2b").hexdigest()


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _is_ours(name: str) -> bool:
    if name.startswith(f"{HEADER}.tmp-"):
        return True
    stem, _, rest = name.partition(".")
    return (stem in ARRAYS and rest.endswith(".npy")) or (stem == "terms" and rest.endswith(".txt"))
