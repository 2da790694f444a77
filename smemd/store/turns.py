"""One scan at a time per namespace: reads whose cost grows with a namespace (a filter tested on
every row, a count, a list page) queue behind each other, and leave the rest of a backend's
connections to everyone else. Each backend takes its turn here before a connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from smemd.store import deadline


class NamespaceTurns:
    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}

    @contextlib.asynccontextmanager
    async def of(self, namespace: str) -> AsyncIterator[None]:
        """The namespace's turn, waited for no longer than the request's deadline."""
        turn = self._turns.get(namespace)
        if turn is None:
            turn = self._turns[namespace] = _Turn()
        turn.users += 1
        try:
            await deadline.waiting(turn.lock.acquire())
            try:
                yield
            finally:
                turn.lock.release()
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[namespace]


class _Turn:
    """A namespace's scan lock and how many requests hold or await it (kept while any do)."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
