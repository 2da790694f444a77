"""Loading one kind's indexes without blocking the event loop: from its saved files when they
load and can be trusted, else from the store's rows; either way checked against the store at
the end (the catch-up), so a file saved before later writes, or before a kill -9, comes out
exactly as the rows say.

The blocking parts (reading and checking files, building a graph, BM25's tokenising) run in a
daemon thread: a stop never waits for them. Writes go on meanwhile; the load applies those that
commit while it runs before it publishes the indexes (per_namespace.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from smemd.engine.index import saved
from smemd.engine.index.files import IndexFileError
from smemd.engine.index.kinds import KindIndex
from smemd.store.protocol import Reader, Store
from smemd.store.records import IndexKind, IndexRows
from smemd.store.vectors import stack

log = logging.getLogger("smemd.index")

LOAD_PAGE = 4096
T = TypeVar("T")


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """Run `work` in a daemon thread; cancelling the await leaves it to finish on its own."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            result = work(*args)
        except BaseException as err:  # handed to the awaiting task, whatever it is
            loop.call_soon_threadsafe(_settle, future, None, err)
        else:
            loop.call_soon_threadsafe(_settle, future, result, None)

    threading.Thread(target=run, name="smemd-index", daemon=True).start()
    return await future


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def load_kind(
    store: Store,
    namespace: str,
    kind: IndexKind,
    rows: int,
    directory: Path | None,
    make: Callable[[int], KindIndex],
    *,
    dimension: int,
) -> tuple[KindIndex, bool]:
    """The kind's indexes, and whether they should be saved (built anew, or much caught up).
    `directory`: where a graph was saved (None when the kind is too small to have one);
    `make(rows)` gives empty indexes for that many rows."""
    index = None
    if directory is not None and (directory / "vectors").exists():
        try:
            index = await off_loop(saved.load, directory, dimension)
        except IndexFileError as err:
            log.warning(
                "index of %s %s not trusted, rebuilt from the store: %s", namespace, kind, err
            )
    fresh = index is None
    if index is None:
        index = await _from_rows(store, namespace, kind, make(rows))
    changed = await catch_up(store, namespace, kind, index)
    return index, fresh or changed > max(1000, len(index) // 100)


async def _from_rows(store: Store, namespace: str, kind: IndexKind, index: KindIndex) -> KindIndex:
    after = 0
    while True:
        async with store.read() as reader:
            rows = await _page(reader, namespace, kind, after)
        if not rows.seqs:
            return index
        await _add(index, rows)
        after = rows.seqs[-1]


async def catch_up(store: Store, namespace: str, kind: IndexKind, index: KindIndex) -> int:
    """Make the indexes say what the store's rows said when read; how many rows differed.
    Writes committed after the read reach the indexes through the load (per_namespace.py)."""
    async with store.read() as reader:
        seqs, live = await reader.index_states(namespace, kind)
        states = (np.array(seqs, np.int64), np.array(live, bool))
        diff = await off_loop(_differences, index, *states)
        missing = diff[0]
        fetched = await reader.index_rows_by_seq(kind, missing.tolist()) if missing.size else None
    if _size(diff) < 64:
        _apply(index, fetched, *diff[1:])
    else:
        await off_loop(_apply, index, fetched, *diff[1:])
    return _size(diff)


Differences = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _differences(index: KindIndex, seqs: np.ndarray, live: np.ndarray) -> Differences:
    """(rows the index lacks, keys the store lacks, rows whose live flag differs, and the
    store's flag for each of those)."""
    keys, key_live = index.state()
    missing = np.setdiff1d(seqs, keys, assume_unique=True)
    gone = np.setdiff1d(keys, seqs, assume_unique=True)
    common, in_store, in_index = np.intersect1d(seqs, keys, assume_unique=True, return_indices=True)
    differs = live[in_store] != key_live[in_index]
    return missing, gone, common[differs], live[in_store][differs]


def _size(diff: Differences) -> int:
    return int(diff[0].size + diff[1].size + diff[2].size)


def _apply(
    index: KindIndex, fetched: IndexRows | None, gone: np.ndarray, flipped: np.ndarray,
    now_live: np.ndarray,
) -> None:  # fmt: skip
    if gone.size:
        index.remove(gone.tolist())
    for key, live in zip(flipped.tolist(), now_live.tolist(), strict=True):
        index.set_live(key, live)
    if fetched is not None and fetched.seqs:
        index.add(
            fetched.seqs, stack(fetched.vectors, index.dimension), fetched.texts, fetched.live
        )


async def _add(index: KindIndex, rows: IndexRows) -> None:
    vectors = stack(rows.vectors, index.dimension)
    if index.is_graph:  # inserting into a graph is the slow part of a large load
        await off_loop(index.add, rows.seqs, vectors, rows.texts, rows.live)
    else:
        index.add(rows.seqs, vectors, rows.texts, rows.live)


async def _page(reader: Reader, namespace: str, kind: IndexKind, after: int) -> IndexRows:
    if kind == "memories":
        return await reader.memory_index_rows(namespace, after, LOAD_PAGE)
    return await reader.chunk_index_rows(namespace, after, LOAD_PAGE)
