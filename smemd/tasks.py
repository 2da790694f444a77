"""Stopping the background tasks the daemon started (a sampler, a watcher, a fetch, a ticker)."""

from __future__ import annotations

import asyncio
from typing import Any


async def stop(*tasks: asyncio.Task[Any]) -> None:
    """Cancel `tasks` and wait until each has ended; an error one of them ended with is raised
    here (the first), as awaiting it would.

    Not `task.cancel()` then `await task` under `suppress(CancelledError)`: a cancel aimed at
    the caller while it waits (a stop cut short by its own timeout, the daemon's shutdown) comes
    as the same CancelledError and was swallowed with the task's, so the caller went on as if
    nothing had asked it to stop.
    """
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
