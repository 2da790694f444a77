"""The fetching phase: a document given as a URL becomes the text of what the URL serves.

The fetch goes through the SSRF guard (`[ingest] allow-hosts`) within the configured limits,
and the body is converted in a capped child process. The worker runs it between two commits,
holding no transaction, and apart from its batches (`Fetches`): a fetch may take a minute, and
other documents should not wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import yarl

from smemd.config import IngestConfig
from smemd.fetch.client import (
    FetchError,
    FetchLimits,
    FetchStatus,
    FetchTimeout,
    FetchTooLarge,
    FetchUnreachable,
    fetch,
)
from smemd.fetch.convert import Converted, Unconvertible, convert_isolated
from smemd.fetch.guard import SCHEMES, Guard
from smemd.tasks import stop

log = logging.getLogger("smemd.engine")

MB = 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0  # the longest wait for the next bytes
MAX_REDIRECTS = 5
CONVERT_TIMEOUT_S = 60.0  # a crafted page or PDF can keep a parser busy; the child dies here


class FetchFailed(Exception):
    """A URL that gave no text; `retry` says whether trying again could help."""

    def __init__(self, reason: str, *, retry: bool) -> None:
        super().__init__(reason)
        self.retry = retry


def url_of(content: str) -> str | None:
    """The URL that a document's content is, when it is nothing else: one http(s) URL with a host."""
    text = content.strip()
    if not text or any(c.isspace() for c in text):
        return None
    try:
        url = yarl.URL(text)
    except ValueError:
        return None
    if url.scheme not in SCHEMES or not url.raw_host:
        return None
    return text


def limits_of(config: IngestConfig) -> FetchLimits:
    return FetchLimits(
        connect_timeout_s=min(CONNECT_TIMEOUT_S, config.fetch_timeout_s),
        read_timeout_s=min(READ_TIMEOUT_S, config.fetch_timeout_s),
        total_timeout_s=config.fetch_timeout_s,
        max_bytes=config.max_fetch_mb * MB,
        max_redirects=MAX_REDIRECTS,
    )


class Fetcher:
    def __init__(self, guard: Guard, limits: FetchLimits) -> None:
        self.guard = guard
        self.limits = limits

    @classmethod
    def configured(cls, config: IngestConfig) -> Fetcher:
        return cls(Guard(config.allow_hosts), limits_of(config))

    async def text_of(self, url: str) -> Converted:
        """The text, title and kind of what `url` serves; FetchFailed saying why not."""
        try:
            fetched = await fetch(url, self.guard, self.limits)
        except FetchError as err:
            raise self._failure(err) from err
        log.debug(
            "fetched %s: %d bytes of %s", fetched.url, len(fetched.body), fetched.content_type
        )
        try:
            return await convert_isolated(
                fetched.body, fetched.content_type, fetched.url, timeout_s=CONVERT_TIMEOUT_S
            )
        except Unconvertible as err:  # the same bytes would not convert any better next time
            raise FetchFailed(err.message, retry=False) from err

    def _failure(self, err: FetchError) -> FetchFailed:
        """Timeouts, lost connections and a server's 5xx may pass; the rest would fail again."""
        if isinstance(err, FetchTooLarge):
            limit = self.limits.max_bytes / MB
            return FetchFailed(f"too large: {err} (max-fetch-mb = {limit:g})", retry=False)
        if isinstance(err, FetchStatus):
            return FetchFailed(err.message, retry=err.http_status >= 500)
        # Refusals, too many redirects and malformed URLs are the same the next time.
        return FetchFailed(err.message, retry=isinstance(err, FetchTimeout | FetchUnreachable))


class Fetches:
    """The fetches in flight, by job id, at most `limit` at a time; `done` is called after each."""

    def __init__(self, limit: int, done: Callable[[], None]) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._done = done
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, job_id: str, work: Coroutine[Any, Any, None]) -> None:
        self._tasks[job_id] = asyncio.create_task(self._run(job_id, work), name=f"fetch-{job_id}")

    async def _run(self, job_id: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            async with self._slots:
                await work
        finally:
            del self._tasks[job_id]
            self._done()

    async def cancel(self) -> None:
        """Stop every fetch; their jobs stay in `fetching`, to be fetched again at the next start."""
        await stop(*self._tasks.values())
