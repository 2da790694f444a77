"""A large kind's indexes on disk: the HNSW graph with its float16 vectors, keys and live mask,
and the BM25 postings, each a set of files that loads whole or is refused (files.py). Blocking
work, run in a thread (see loading.py); the loaded indexes are then checked against the store
by the caller, which is what makes a file saved before later writes (or before a kill) still
right."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smemd.engine.index import files
from smemd.engine.index.ann import AnnIndex
from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.files import IndexFileError
from smemd.engine.index.kinds import KindIndex

_VECTOR_FILES = ("graph", "exact", "keys", "live")


def save(directory: Path, kind: KindIndex) -> None:
    """Write the kind's graph and postings (it must be held: nothing changes meanwhile)."""
    if not isinstance(kind.vectors, AnnIndex):
        raise TypeError("only a graph's indexes are saved: smaller ones load from the store")
    ann = kind.vectors
    keys, live = ann.state()
    files.save(
        directory / "vectors",
        {
            "graph": ann.save_graph,
            "exact": ann.save_exact,
            "keys": lambda path: _save_array(path, keys),
            "live": lambda path: _save_array(path, live),
        },
        {"dimension": ann.dimension, "rows": int(keys.size)},
    )
    kind.words.save(directory / "words")


def load(directory: Path, dimension: int) -> KindIndex:
    """The saved indexes, or IndexFileError when any part cannot be trusted."""
    meta, paths = files.load(directory / "vectors", _VECTOR_FILES)
    if meta.get("dimension") != dimension:
        raise IndexFileError(
            f"saved vectors have {meta.get('dimension')} dimensions, not {dimension}"
        )
    keys = _load_array(paths["keys"], np.int64)
    live = _load_array(paths["live"], np.bool_)
    if keys.size != live.size or keys.size != meta.get("rows") or np.any(keys[1:] <= keys[:-1]):
        raise IndexFileError("the keys and the live mask do not agree")
    try:
        vectors = AnnIndex.restored(dimension, paths["graph"], paths["exact"], keys, live)
    except ValueError as err:
        raise IndexFileError(str(err)) from err
    words = LexicalIndex.load(directory / "words")
    return KindIndex(vectors, words)


def _save_array(path: Path, array: np.ndarray) -> None:
    with path.open("wb") as file:
        np.save(file, array, allow_pickle=False)


def _load_array(path: Path, dtype: type) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise IndexFileError(f"{path.name}: {err}") from err
    if array.ndim != 1 or array.dtype != np.dtype(dtype):
        raise IndexFileError(f"{path.name}: not a 1-d {np.dtype(dtype)} array")
    return array
