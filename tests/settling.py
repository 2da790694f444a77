"""Waiting for the engine's queue to empty, bounded by its progress rather than by a guess at
its total: the wait fails only when no job has moved (a phase ended, a job ended) for `stall_s`
at this machine's pace, so a long queue on a busy machine is waited for and a stuck one is not."""

from __future__ import annotations

import asyncio

from smemd.engine.core import Engine
from tests.pace import scaled

STALL_S = 30.0


def _moves(engine: Engine) -> int:
    """Every phase a job has finished and every job ended: grows while ingest gets on."""
    worker = engine.worker
    phases = sum(series.count for series in worker.phase_seconds.series.values())
    return phases + sum(worker.ended.counts.values())


async def until_idle(engine: Engine, stall_s: float = STALL_S) -> None:
    """Until no job is open; AssertionError when none moved for `stall_s` (scaled)."""
    bound = scaled(stall_s)
    idle = asyncio.ensure_future(engine.wait_idle())
    try:
        moved = _moves(engine)
        while True:
            done, _ = await asyncio.wait({idle}, timeout=bound)
            if done:
                return idle.result()
            now = _moves(engine)
            assert now != moved, f"no ingest job moved for {bound:.0f} s"
            moved = now
    finally:
        idle.cancel()
