"""The date a document's metadata says it is from, for a client that sends it there instead of
in the document's `date` (v3's `documentDate`): memorybench's Supermemory provider adds each
session with `metadata: {sessionId, date}`, an ISO-8601 instant. Undated, a conversation's
sessions are no sessions to recall (smemd.engine.sessions) and a question that names a day finds
no turn dated in it. And the instant a chat log's caption tells (`told_instant`: "The following
session took place at 1:56 pm on 8 May, 2023"), for a document dated neither way.

Only what reads as a date for certain is taken: an ISO-8601 date or date-time under one of a few
names, or a Unix time under `timestamp` (seconds, or milliseconds when it is that large). Anything
else is the client's own metadata, kept as it is and never an error: "date": "next week" or
"time": 45 say nothing of when the content is from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import TypeGuard

from smemd import instants
from smemd.engine.dates.absolute import first_day

# Metadata names, as read with case and "_" / "-" left out, in the order they are tried.
DATE_NAMES = ("documentdate", "date", "sessiondate", "datetime")
TIMESTAMP_NAME = "timestamp"  # ISO-8601, or a Unix time in seconds or milliseconds
# A Unix time past this is in milliseconds: in seconds it would be the year 5138.
_MILLISECONDS_FROM = 1e11
# An ISO-8601 date or instant written in text ("2023-05-08", "2023-05-08T13:56:00Z").
ISO_INSTANT = re.compile(r"\d{4}-\d\d-\d\d(?:[T ][\d:.]+)?(?:Z|[+-]\d\d:?\d\d)?")
_TIME_12H = re.compile(r"\b(1[0-2]|0?[1-9])(?::([0-5]\d))?\s*([ap])\.?\s?m\b", re.IGNORECASE)
_TIME_24H = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")


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


def told_instant(text: str) -> float | None:
    """The instant a short text tells: an ISO-8601 date-time in it, else the first day it names
    (smemd.engine.dates.absolute) at the time of day it names, if any ("1:56 pm on 8 May,
    2023", "8 May 2023, 13:56"). UTC, as an ISO-8601 time without an offset is. None when it
    names no day."""
    for written in ISO_INSTANT.finditer(text):
        if len(written.group(0)) > len("2023-05-08"):  # a time of day with the date
            try:
                return instants.parse(written.group(0))
            except instants.InstantError:
                continue
    day = first_day(text)
    if day is None:
        return None
    if clock := _TIME_12H.search(text):
        hour = int(clock[1]) % 12 + (12 if clock[3].lower() == "p" else 0)
        day += timedelta(hours=hour, minutes=int(clock[2] or 0))
    elif clock := _TIME_24H.search(text):
        day += timedelta(hours=int(clock[1]), minutes=int(clock[2]))
    return day.timestamp()
