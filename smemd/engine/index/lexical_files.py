"""A lexical index on disk: its arrays as `.npy` files and its terms as UTF-8 lines, saved and
checked as one set (files.py), with the counts the arrays must agree with in the header."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smemd.engine.index import files
from smemd.engine.index.files import IndexFileError

ARRAYS = {
    "keys": np.dtype(np.int64),
    "live": np.dtype(np.bool_),
    "length": np.dtype(np.float32),
    "start": np.dtype(np.int64),
    "rows": np.dtype(np.int32),
    "tf": np.dtype(np.float32),
}


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
    terms = "\n".join(postings.terms)
    if terms.count("\n") != max(len(postings.terms) - 1, 0):  # no code point makes one in tokens()
        raise ValueError("a term holds a newline")
    writers = {
        name: _array_writer(getattr(postings, name), dtype) for name, dtype in ARRAYS.items()
    }
    writers["terms"] = _bytes_writer(terms.encode())
    meta = {
        "rows": int(postings.keys.size),
        "max_key": int(postings.keys.max()) if postings.keys.size else None,
        "terms": len(postings.terms),
        "postings": int(postings.rows.size),
    }
    files.save(directory, writers, meta)


def read(directory: Path) -> Postings:
    """The postings last saved in `directory`, whole and checked, or `IndexFileError`."""
    meta, paths = files.load(directory, [*ARRAYS, "terms"])
    try:
        arrays = {name: _read_array(paths[name], dtype) for name, dtype in ARRAYS.items()}
        terms = paths["terms"].read_bytes()
        postings = Postings(**arrays, terms=terms.decode().split("\n") if terms else [])
        _check(postings, meta)
    except IndexFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise IndexFileError(f"lexical index in {directory}: {err!r}") from err
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


def _array_writer(array: np.ndarray, dtype: np.dtype) -> Any:
    def write(path: Path) -> None:
        with path.open("wb") as file:
            np.save(file, np.ascontiguousarray(array, dtype=dtype), allow_pickle=False)

    return write


def _bytes_writer(data: bytes) -> Any:
    def write(path: Path) -> None:
        path.write_bytes(data)

    return write


def _read_array(path: Path, dtype: np.dtype) -> np.ndarray:
    array = np.load(path, allow_pickle=False)  # the file is the one digested just before
    if array.dtype != dtype or array.ndim != 1:
        raise IndexFileError(f"{path.name}: {array.dtype} of {array.ndim} dimensions")
    return array
