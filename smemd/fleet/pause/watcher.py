"""The watcher that follows the pause file, and what it says of each change."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from smemd.fleet.pause.disk import Look, look
from smemd.fleet.pause.rules import Pause, PauseError, parse_pause
from smemd.tasks import stop

log = logging.getLogger("smemd.fleet")

# A file's mtime may trail the clock that set its `until` by a kernel tick (by 2 s on FAT), so the
# watcher allows this much past MAX_AHEAD: what smemd writes for `for: "720h"` must be accepted.
MTIME_SLACK = 2.0


class PauseWatcher:
    """Follows the pause file by polling; as an async context manager it runs the poll task.

    A file is checked as of when it was written (its mtime), so a pause that simply ran out is
    no error after a restart, while a file written with a past `until` is one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        known: Mapping[str, bool],
        period: float = 0.5,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < period <= 1:
            raise ValueError(f"poll period must be in (0, 1] seconds, got {period}")
        self.path = Path(path)
        self.known = dict(known)
        self.period = period
        self.pause: Pause | None = None  # the last valid pause, expired or not
        self.error: str | None = None  # why the file as it stands was rejected
        self._clock = clock
        self._key: object = None  # matches no look, so the first one reads the file
        self._announced: Pause | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    def active(self, now: float | None = None) -> Pause | None:
        now = self._clock() if now is None else now
        return self.pause if self.pause is not None and self.pause.is_active(now) else None

    def paused(self, now: float | None = None) -> frozenset[str]:
        pause = self.active(now)
        return pause.nodes if pause is not None else frozenset()

    async def changed(self) -> None:
        """Return at the next change of the active pause: a new file, a removal or an expiry."""
        await self._changed.wait()

    async def refresh(self) -> None:
        """Look at the file now rather than at the next poll (after smemd writes it, say)."""
        async with self._lock:
            try:
                seen = await asyncio.to_thread(look, self.path, self._key)
                if seen is not None:
                    self._take(seen)
            except Exception as err:  # a bug here must not stop the watching
                message = f"internal error while checking the file: {err!r}"
                if message != self.error:
                    log.exception("pause file %s: %s", self.path, message)
                self.error = message
            self._announce()

    async def __aenter__(self) -> PauseWatcher:
        await self.refresh()
        self._task = asyncio.create_task(self._run(), name="pause-watcher")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            await stop(self._task)
            self._task = None

    async def _run(self) -> None:
        while True:
            delay = self.period
            pause = self.active()
            if pause is not None:  # wake at the expiry, not up to a period after it
                delay = min(delay, max(0.0, pause.expires_at - self._clock()))
            await asyncio.sleep(delay)
            await self.refresh()

    def _take(self, seen: Look) -> None:
        self._key = seen.key
        if seen.data is None:
            if seen.error is None:  # no file: nothing lent
                self.pause = None
            self._set_error(seen.error)
            return
        try:
            now = min(self._clock(), seen.mtime)
            pause = parse_pause(seen.data, known=self.known, now=now, slack=MTIME_SLACK)
        except PauseError as err:
            self._set_error(err.message)
            return
        self.pause = pause
        self._set_error(None)

    def _set_error(self, error: str | None) -> None:
        if error is not None and error != self.error:
            kept = _describe(self.active())
            log.warning("pause file %s rejected: %s; still in force: %s", self.path, error, kept)
        elif error is None and self.error is not None:
            log.info("pause file %s is valid again", self.path)
        self.error = error

    def _announce(self) -> None:
        current = self.active()
        if current == self._announced:
            return
        self._announced = current
        log.info("pause: %s", _describe(current))
        event, self._changed = self._changed, asyncio.Event()
        event.set()


def _describe(pause: Pause | None) -> str:
    if pause is None:
        return "no nodes lent"
    # repr: the farm's group writes these strings, and a newline in them must not forge a log line
    who = f" by {pause.by!r}" if pause.by else ""
    why = f" for {pause.reason!r}" if pause.reason else ""
    return f"{', '.join(sorted(pause.nodes))} lent until {pause.until.isoformat()}{who}{why}"
