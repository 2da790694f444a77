"""Dreaming: background work on the memories while nobody needs the models.

It runs when no ingest job is open and the lanes have been quiet for `quiet_s` (20 s by
default): no search and no ingest in that time. Reads that use no model (a console polling
lists and status) do not count. Each step is small (nine memories typed, six looked at for
links, three alias suggestions judged, or one group of memories asked for an inference), and
quiet is checked again between steps, so a search waits at most one step. Typing comes first,
then links, aliases, inferences; without a model nothing is inferred (`inference` says so) and
alias suggestions wait for a person.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Literal

import msgspec

from smemd.engine.dreaming.aliaser import Aliaser
from smemd.engine.dreaming.inference_prompt import Chatter
from smemd.engine.dreaming.inferrer import Inferrer
from smemd.engine.dreaming.linker import Linker
from smemd.engine.dreaming.typer import Typer
from smemd.engine.index.per_namespace import Indexes
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.quiet import QuietClock
from smemd.fleet.builtin import Embedder
from smemd.store.protocol import Store

log = logging.getLogger("smemd.dreaming")

QUIET_S = 20.0
State = Literal["off", "waiting", "dreaming", "rested"]


class Progress(msgspec.Struct, kw_only=True):
    """What dreaming has done since the daemon started."""

    state: State = "waiting"
    typing_asked: int = 0
    typed: int = 0
    links_looked: int = 0
    linked: int = 0
    inference_looked: int = 0  # memories looked at for inferences
    inference_asked: int = 0  # groups of memories the model was asked to infer from
    inferred: int = 0  # inferences the judge let stand, stored
    aliases_asked: int = 0  # pairs of entities put to the judge
    aliases_merged: int = 0  # of those, merged as one
    last_step_at: float | None = None  # Unix time
    errors: int = 0
    last_error: str = ""


class Dreamer:
    def __init__(
        self, store: Store, indexes: Indexes, judge: Judge | None, clock: QuietClock,
        ingest_idle: asyncio.Event, *, enabled: bool = True, quiet_s: float = QUIET_S,
        embedder: Embedder | None = None, model: Chatter | None = None,
    ) -> None:  # fmt: skip
        """`ingest_idle` is set while no ingest job is open; inferences need the `model` that
        writes them, the `judge` and the `embedder`."""
        self.store = store
        self.clock = clock
        self.ingest_idle = ingest_idle
        self.quiet_s = quiet_s
        self.typer = Typer(store, judge) if judge is not None else None
        self.linker = Linker(store, indexes, judge)
        self.aliaser = Aliaser(store, judge) if judge is not None else None
        self.inferrer = (
            Inferrer(store, indexes, embedder, model, judge)
            if judge is not None and model is not None and embedder is not None
            else None
        )
        self.progress = Progress(state="waiting" if enabled else "off")
        self._enabled = asyncio.Event()
        self._nudge = asyncio.Event()
        if enabled:
            self._enabled.set()

    @property
    def enabled(self) -> bool:
        return self._enabled.is_set()

    @property
    def heuristics(self) -> list[str]:
        """The parts that run on heuristics: typing is skipped, links by shared words."""
        return [] if self.typer is not None else ["typing", "links"]

    @property
    def inference(self) -> str:
        """Whether dreaming infers: "on", or "off" and why."""
        return "on" if self.inferrer is not None else "off: no model"

    async def backlog(self) -> tuple[int, int, int]:
        """What is left to dream over: memories untyped, unlinked and not yet inferred from."""
        async with self.store.read() as reader:
            untyped, unlinked = await reader.dream_backlog(typing=self.typer is not None)
            # Without a model nothing will infer: counting would cost every status poll.
            uninferred = await reader.inference_backlog() if self.inferrer is not None else 0
        return untyped, unlinked, uninferred

    def set_enabled(self, enabled: bool) -> None:
        if enabled:
            self._enabled.set()
        else:
            self._enabled.clear()
        self.progress.state = "waiting" if enabled else "off"
        self._nudge.set()

    async def run(self) -> None:
        while True:
            await self._enabled.wait()
            wait = self.quiet_s - self.clock.quiet_for()
            if not self.ingest_idle.is_set() or wait > 0:
                self.progress.state = "waiting"
                await self._sleep(max(wait, 0.5))
                continue
            self.progress.state = "dreaming"
            try:
                # One daemon dreams at a time on a shared store: no memory worked in two at once.
                async with self.store.turn("dreaming"):
                    worked = await self.step()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a node down or a model gone: try again after a pause
                self.progress.errors += 1
                self.progress.last_error = f"{type(err).__name__}: {err}"
                log.warning("dreaming step failed: %s", self.progress.last_error)
                await self._sleep(self.quiet_s)
                continue
            if not worked and self.enabled:
                # Nothing left: look again later (new memories come with ingest, which
                # resets the quiet clock anyway).
                self.progress.state = "rested"
                await self._sleep(max(self.quiet_s, 1.0))

    async def step(self) -> bool:
        """One batch of typing, else of links, else of aliases, else one inference; False when
        nothing is left to do."""
        if self.typer is not None:
            asked, typed = await self.typer.step()
            if asked:
                self._done(typing_asked=asked, typed=typed)
                return True
        looked, linked = await self.linker.step()
        if looked:
            self._done(links_looked=looked, linked=linked)
            return True
        if self.aliaser is not None:
            asked, merged = await self.aliaser.step()
            if asked:
                self._done(aliases_asked=asked, aliases_merged=merged)
                return True
        if self.inferrer is None:
            return False
        looked, asked, inferred = await self.inferrer.step()
        if looked:
            self._done(inference_looked=looked, inference_asked=asked, inferred=inferred)
        return bool(looked)

    def _done(self, **counts: int) -> None:
        for name, count in counts.items():
            setattr(self.progress, name, getattr(self.progress, name) + count)
        self.progress.last_step_at = time.time()

    async def _sleep(self, seconds: float) -> None:
        self._nudge.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._nudge.wait()
