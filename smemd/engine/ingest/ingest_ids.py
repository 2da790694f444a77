"""Ingest ids: everything one add brought — a document, a batch, an upload, an import — under
one id, which the caller gets back (the `Smem-Ingest-Id` header, or an import's reply) and which
`undo` takes back whole (smemd.engine.undo).

The API opens a mark per request (`marking`); the first document the request makes takes the
id, made then, so a request that adds nothing has none. A client may name the id itself (the
same header on the request), to gather several requests into one add: smemctl's ingest of a
directory sends its batches so.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

from smemd.engine.ids import new_id
from smemd.errors import BadRequest
from smemd.protocol.retraction import INGEST_HEADER

HEADER = INGEST_HEADER
PATTERN = re.compile(r"[A-Za-z0-9_-]{1,100}")


class Mark:
    def __init__(self, given: str | None = None) -> None:
        self.id = given
        self.used = False

    def take(self) -> str:
        if self.id is None:
            self.id = new_id("ing")
        self.used = True
        return self.id


_current: contextvars.ContextVar[Mark | None] = contextvars.ContextVar("smem_ingest", default=None)


def checked(given: str) -> str:
    """An id a client names: BadRequest unless it is 1 to 100 letters, digits, `_` or `-`."""
    if not PATTERN.fullmatch(given):
        raise BadRequest(
            "invalid ingest id",
            f"{HEADER}: 1 to 100 letters, digits, '_' or '-'; got {given[:40]!r}",
        )
    return given


@contextlib.contextmanager
def marking(given: str | None = None) -> Iterator[Mark]:
    """Documents made in this block are one add's, under `given` or an id made when first used."""
    mark = Mark(given)
    token = _current.set(mark)
    try:
        yield mark
    finally:
        _current.reset(token)


def current() -> str | None:
    """The id of the add under way, for a document being made (None outside a request)."""
    mark = _current.get()
    return mark.take() if mark is not None else None
