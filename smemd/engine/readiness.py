"""What `/v1/ready` asks of the engine: a write the store takes, an embedding the search embedder
answers, and whether indexes are loading. Each probe returns its line's detail or raises
(NotReady, or the store's and the fleet's own errors); the API bounds each in time."""

from __future__ import annotations

import time

import numpy as np

from smemd.engine.core import Engine

PROBE_TEXT = "Is smem ready?"


class NotReady(Exception):
    """A probe found the daemon unable to serve; the message says why."""


async def write(engine: Engine) -> str:
    """One real write transaction that leaves nothing behind: a settings key set, then removed."""
    if not engine.store_open:
        raise NotReady("not open: the store has not been reached yet")
    # A key of its own per daemon: probes of several daemons on one PostgreSQL store never wait
    # on each other's row.
    key = f"readiness-probe:{engine.peers.me.id}"
    started = time.perf_counter()
    async with engine.store.write() as writer:
        await writer.set_setting(key, str(time.time()))
        await writer.remove_setting(key)
    return f"writable ({_ms(started)})"


async def embed(engine: Engine) -> str:
    """One short text through the search embedder, as a search's query goes."""
    embedder = engine.embedder
    started = time.perf_counter()
    vectors = await embedder.embed([PROBE_TEXT], kind="query")
    if vectors.shape != (1, embedder.dimension) or not np.isfinite(vectors).all():
        raise NotReady(
            f"{embedder.name} answered a {vectors.shape} array, not one finite vector of "
            f"{embedder.dimension}"
        )
    fallback = " (the hashed fallback)" if embedder.is_fallback else ""
    return f"{embedder.name}{fallback} answered in {_ms(started)}"


def indexes(engine: Engine) -> str:
    """Which indexes are loading, said; never a reason to be unready (see the API's check)."""
    if engine.store.searches_itself:
        return "searched in the store, nothing to load"
    loading = engine.indexes.loading
    if not loading:
        return "none loading"
    return f"{loading} namespace(s) loading, whose searches answer 503 with Retry-After meanwhile"


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"
