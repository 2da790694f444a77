"""Absolute dates a query names ("on 3 May, 2023", "in June 2023", "in 2022") as time windows.

Recall favours what is dated inside them. Only absolute English dates are read here; relative
ones ("last week", "in the spring") depend on when the question is asked (`windows`).
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, datetime, timedelta

import msgspec

from smemd.instants import EARLIEST, LATEST, to_datetime

# A date named in a question is often a few days off the date of the document that tells it:
# "what did she do on 8 May" is answered by a message of 9 May about "yesterday".
SLACK = timedelta(days=3)

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_NUMBER = {name: i for i, name in enumerate(_MONTHS, start=1)}
_NUMBER.update({name[:3]: i for name, i in list(_NUMBER.items())} | {"sept": 9})
_ANY_MONTH = r"(?P<month>" + "|".join(sorted(_NUMBER, key=len, reverse=True)) + r")\.?"
_FULL_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)"

# Most precise first; each match is blanked out so "May 2023" inside "3 May 2023" is not read
# again. Abbreviated months only next to a day or a year, where "mar" and "may" are dates.
_PATTERNS = [
    ("day", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)\b")),
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_ANY_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("day", re.compile(rf"\b{_ANY_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month", re.compile(rf"\b{_ANY_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)),
    ("year", re.compile(rf"\b(?:in|during|of|throughout)\s+{_YEAR}\b", re.IGNORECASE)),
    ("any_year", re.compile(rf"\b(?:in|during|of|throughout)\s+{_FULL_MONTH}\b", re.IGNORECASE)),
]


# "The week before 16 November 2023" reaches back from the date; the date itself stays in the
# window, as what happened then is often told on it ("last week, ...").
_NEXT_TO = re.compile(
    r"\b(?P<unit>day|week|weekend|month)\s+(?P<side>before|prior\s+to|after|following)\s+(?:on\s+)?$",
    re.IGNORECASE,
)
_REACH = {"day": timedelta(days=1), "week": timedelta(days=7), "weekend": timedelta(days=7),
          "month": timedelta(days=31)}  # fmt: skip


class Timeframe(msgspec.Struct, frozen=True):
    """Windows [start, end) in Unix seconds, slack included, and months of any year ("in June")."""

    spans: tuple[tuple[float, float], ...] = ()
    months: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.spans or self.months)

    def contains(self, t: float) -> bool:
        if any(start <= t < end for start, end in self.spans):
            return True
        if self.months:
            # The instant's UTC day and its neighbours within SLACK: a date near midnight may be
            # told in another zone. Near the ends of the calendar a neighbour may not exist.
            day = to_datetime(t)
            return any(
                (day + shift).month in self.months
                for shift in (-SLACK, timedelta(0), SLACK)
                if EARLIEST <= day.timestamp() + shift.total_seconds() <= LATEST
            )
        return False


def timeframe(text: str) -> Timeframe:
    """The dates `text` names, read as UTC days, months and years."""
    spans: list[tuple[float, float]] = []
    months: set[int] = set()
    for precision, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            parts = match.groupdict()
            month = _month(parts.get("month"))
            if precision == "any_year":
                months.add(month)
                continue
            year = int(parts["year"])
            try:
                if precision == "day":
                    start = datetime(year, month, int(parts["day"]), tzinfo=UTC)
                    end = start + timedelta(days=1)
                elif precision == "month":
                    start = datetime(year, month, 1, tzinfo=UTC)
                    end = start + timedelta(days=monthrange(year, month)[1])
                else:
                    start = datetime(year, 1, 1, tzinfo=UTC)
                    end = datetime(year + 1, 1, 1, tzinfo=UTC)
                start, end = _reach(text[: match.start()], start, end)
                spans.append(((start - SLACK).timestamp(), (end + SLACK).timestamp()))
            except (ValueError, OverflowError):
                continue  # "31 February 2023", "2023-13-01", a day the slack takes off the calendar
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return Timeframe(tuple(spans), frozenset(months))


def first_day(text: str) -> datetime | None:
    """The first date to the day that `text` names ("8 May, 2023", "May 8 2023", "2023-05-08"),
    as the start of its UTC day, else None."""
    days = [
        (match.start(), day)
        for precision, pattern in _PATTERNS
        if precision == "day"
        for match in pattern.finditer(text)
        if (day := _day(match)) is not None
    ]
    return min(days)[1] if days else None


def _day(match: re.Match[str]) -> datetime | None:
    try:
        return datetime(int(match["year"]), _month(match["month"]), int(match["day"]), tzinfo=UTC)
    except ValueError:
        return None  # "31 February 2023"


def _reach(before: str, start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """A date's window widened by "the week before" or "the day after" written ahead of it."""
    near = _NEXT_TO.search(before[-40:])
    if near is None:
        return start, end
    reach = _REACH[near["unit"].lower()]
    if near["side"].lower() in ("after", "following"):
        return start, end + reach
    return start - reach, end


def _month(name: str | None) -> int:
    if name is None:
        return 0
    return int(name) if name.isdigit() else _NUMBER[name.lower()]
