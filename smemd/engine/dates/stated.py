"""The date a document's metadata says it is from, for a client that sends it there instead of
in the document's `date` (v3's `documentDate`): memorybench's Supermemory provider adds each
session with `metadata: {sessionId, date}`, an ISO-8601 instant. Undated, a conversation's
sessions are no sessions to recall (smemd.engine.sessions) and a question that names a day finds
no turn dated in it.

Only what reads as a date for certain is taken: an ISO-8601 date or date-time under one of a few
names, or a Unix time under `timestamp` (seconds, or milliseconds when it is that large). Anything
else is the client's own metadata, kept as it is and never an error: "date": "next week" or
"time": 45 say nothing of when the content is from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

from smemd import instants

# Metadata names, as read with case and "_" / "-" left out, in the order they are tried.
DATE_NAMES = ("documentdate", "date", "sessiondate", "datetime")
TIMESTAMP_NAME = "timestamp"  # ISO-8601, or a Unix time in seconds or milliseconds
# A Unix time past this is in milliseconds: in seconds it would be the year 5138.
_MILLISECONDS_FROM = 1e11


def stated_date(metadata: Mapping[str, object]) -> float | None:
    """The instant (Unix seconds) the metadata dates the document at, else None."""
    by_name: dict[str, object] = {}
    for key, value in metadata.items():
        by_name.setdefault(key.replace("_", "").replace("-", "").casefold(), value)
    for name in (*DATE_NAMES, TIMESTAMP_NAME):
        value = by_name.get(name)
        if isinstance(value, str):
            try:
                return instants.parse(value)
            except instants.InstantError:
                continue
        elif name == TIMESTAMP_NAME and _is_number(value):
            seconds = float(value) / (1000 if value >= _MILLISECONDS_FROM else 1)
            if 0 < seconds <= instants.LATEST:  # not NaN either
                return seconds
    return None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
