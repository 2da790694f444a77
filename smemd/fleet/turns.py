"""Turns at the in-process model: what a search asks for goes ahead of what ingest asks for.

The builtin embedder runs in smemd's own threads on smemd's own cores, so nothing but this
keeps one large document from holding it: a 9 MB document is 7,000 to 9,000 chunks, minutes
of model time. Each lane is a view of the one model (as the pool's lanes are of its nodes):

- an interactive call (a search's query, a memory added by hand) runs at once, beside whatever
  batch is running: onnxruntime's sessions take concurrent runs;
- a background call (ingest, dreaming) is cut into batches of at most `BACKGROUND_BATCH` texts
  that run one at a time; none starts while an interactive call runs or waits, and the event
  loop serves everyone else between them.

A priority, then, not a lock: a search waits for no document, and a document's batches wait for
searches only as long as those take. A cancelled call (a stop, a request's deadline) stops at the
end of the batch in its thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence

import numpy as np

from smemd.fleet.builtin import DIMENSION, InProcess, Kind, Vectors
from smemd.fleet.pool import Lane
from smemd.tallies import Tally, Timings

# Texts in one background batch. A chunk is up to 256 tokens, and 8 of them take tens of
# milliseconds on two cores: the longest a search's embedding shares the cores with ingest.
BACKGROUND_BATCH = 8
BUILTIN = "builtin"  # the node the in-process model is, in the counts of model calls


class Turns:
    """Who is at the model: interactive calls counted, background batches one at a time."""

    def __init__(self, calls: Tally | None = None, call_seconds: Timings | None = None) -> None:
        """`calls` counts each call to the model by lane and outcome (node `builtin`, role
        `embed`), `call_seconds` times them, as the pool does for its nodes."""
        self.calls = calls or Tally()
        self.call_seconds = call_seconds or Timings()
        self._interactive = 0
        self._quiet = asyncio.Event()  # set while no interactive call runs
        self._quiet.set()
        self._background = asyncio.Lock()

    async def interactive(self, model: InProcess, texts: list[str], kind: Kind) -> Vectors:
        self._interactive += 1
        self._quiet.clear()
        try:
            return await self._counted(model.embed(texts, kind=kind))
        finally:
            self._interactive -= 1
            if not self._interactive:
                self._quiet.set()

    async def background(self, model: InProcess, texts: list[str], kind: Kind) -> Vectors:
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), BACKGROUND_BATCH):
            async with self._background:
                while not self._quiet.is_set():  # cleared again by a call that came meanwhile
                    await self._quiet.wait()
                out[start : start + BACKGROUND_BATCH] = await self._counted(
                    model.embed(texts[start : start + BACKGROUND_BATCH], kind=kind)
                )
        return out

    async def _counted(self, call: Awaitable[Vectors]) -> Vectors:
        started = time.perf_counter()
        try:
            vectors = await call
        except Exception:
            self.calls.add(BUILTIN, "embed", "failed")
            raise
        finally:
            self.call_seconds.observe(time.perf_counter() - started, BUILTIN, "embed")
        self.calls.add(BUILTIN, "embed", "ok")
        return vectors


class LaneModel:
    """The `Embedder` interface over the in-process model, for one lane."""

    def __init__(self, model: InProcess, lane: Lane, turns: Turns) -> None:
        self.model = model
        self.lane: Lane = lane
        self.turns = turns
        self.name = model.name
        self.dimension = model.dimension
        self.is_fallback = model.is_fallback

    async def embed(self, texts: Sequence[str], *, kind: Kind = "document") -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        batch = list(texts)
        if self.lane == "interactive":
            return await self.turns.interactive(self.model, batch, kind)
        return await self.turns.background(self.model, batch, kind)
