"""Instants as smem keeps them (Unix seconds, UTC): parsed into the range a calendar can show,
and turned back into dates without failing on what an older build stored.

Python's `datetime` stops at years 1 and 9999. An ISO-8601 time such as
`9999-12-31T23:59:59-14:00` is valid text but names an instant in year 10000 (UTC), which no
reply could render; it is refused where it comes in. Rows an older build stored outside the
range are shown clamped to its ends, so reading them never fails.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

EARLIEST = datetime(1, 1, 1, tzinfo=UTC).timestamp()
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


class InstantError(ValueError):
    """Text that is not an ISO-8601 instant inside the supported range; says which."""


def parse(text: str) -> float:
    """ISO-8601 date or date-time to Unix seconds; a time without an offset is UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InstantError(f"expected ISO-8601, got {_short(text)}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        seconds = parsed.timestamp()
    except (OverflowError, ValueError):
        seconds = math.inf
    if not EARLIEST <= seconds <= LATEST:
        raise InstantError(
            f"{_short(text)} is outside the supported range, "
            "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC"
        )
    return seconds


def to_datetime(seconds: float) -> datetime:
    """The UTC datetime of a stored instant, clamped into the range a datetime can hold."""
    if math.isnan(seconds):
        seconds = EARLIEST
    return datetime.fromtimestamp(min(max(seconds, EARLIEST), LATEST), UTC)


def utc_day(seconds: float) -> date:
    """The UTC day of an instant, as documents' content dates are read."""
    return to_datetime(seconds).date()


def iso(seconds: float | None) -> str | None:
    """`2025-03-14T09:30:00.000Z`, or None."""
    if seconds is None:
        return None
    return to_datetime(seconds).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
