"""A request's deadline as the store keeps it: a wait for a connection ends there, and a query
still running then is interrupted (see Database).

The API starts one per request (`[api] request-timeout-s`); background work (ingest, dreaming)
runs without one. It lives in a context variable, so tasks a request starts inherit it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Iterator
from typing import TypeVar

import msgspec

from smemd.errors import TimedOut

T = TypeVar("T")


class Deadline(msgspec.Struct, frozen=True):
    at: float  # on the event loop's clock
    budget_s: float  # what the request was given, for the message

    def passed(self) -> bool:
        return asyncio.get_running_loop().time() >= self.at

    def error(self) -> TimedOut:
        return TimedOut(
            "request took too long",
            f"stopped after {self.budget_s:g} s ([api] request-timeout-s); "
            "narrow the request, or try again",
        )


_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "smem_deadline", default=None
)


def current() -> Deadline | None:
    return _current.get()


@contextlib.contextmanager
def within(seconds: float) -> Iterator[Deadline]:
    """Work in this block (and tasks it starts) must be done `seconds` from now."""
    deadline = Deadline(asyncio.get_running_loop().time() + seconds, seconds)
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


@contextlib.contextmanager
def lifted() -> Iterator[None]:
    """No deadline in this block: work that outlives the request that started it (an index load
    the next request would otherwise begin again)."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


async def waiting(step: Awaitable[T]) -> T:
    """Await `step`, but no longer than the deadline: then TimedOut."""
    deadline = _current.get()
    if deadline is None:
        return await step
    try:
        async with asyncio.timeout_at(deadline.at):
            return await step
    except TimeoutError:
        raise deadline.error() from None
