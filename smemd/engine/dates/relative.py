"""Relative dates ("yesterday", "last Tuesday", "3 days ago") resolved against a day.

For a fact the document's date is the reference (for a query, the instant it is asked at): "Last Tuesday's meeting was cancelled" written on Friday
2025-03-14 happened on 2025-03-11. Models are poor at calendar arithmetic, so an eventDate an LLM
gives is checked here and replaced when a phrase in the fact contradicts it. Absolute dates are
`absolute`'s; days are UTC days, as there.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, date, datetime, timedelta

import msgspec

from smemd.engine.dates.absolute import timeframe

_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_COUNTS = {"a": 1, "an": 1, "one": 1, "a couple of": 2, "two": 2, "three": 3, "four": 4,
           "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
           "twelve": 12}  # fmt: skip
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + r")"
# "A few" and "several" are loose counts: two to five, three standing for them.
_FEW = r"(?P<few>a\s+few|several)"

# One alternation, longest phrases first, so "the day before yesterday" is not also "yesterday"
# and "last week" is not "last weekend". A bare weekday ("every Tuesday", "Tuesdays") is a habit,
# not a day: only "on", "last" or "this past" before it makes it one.
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<before_yesterday>the\s+day\s+before\s+yesterday)"
    r"|(?P<yesterday>yesterday|last\s+night)"
    r"|(?P<today>today|tonight|this\s+morning|this\s+afternoon|this\s+evening)"
    r"|(?P<tomorrow>tomorrow)"
    rf"|(?:{_COUNT}|{_FEW})\s+(?P<unit>days?|weeks?|months?|years?)\s+ago"
    r"|(?P<last_weekend>last\s+weekend)"
    r"|(?P<last_week>last\s+week)"
    r"|(?P<last_month>last\s+month)"
    r"|(?P<last_year>last\s+year)"
    rf"|(?:last|this\s+past|on)\s+{_WEEKDAY}"
    r")\b",
    re.IGNORECASE,
)


class Resolved(msgspec.Struct, frozen=True):
    """A phrase and the day it names; `earliest`..`latest` (inclusive) is what it allows."""

    phrase: str
    day: date
    earliest: date
    latest: date

    def allows(self, day: date) -> bool:
        return self.earliest <= day <= self.latest


def relative_dates(text: str, reference: date) -> list[Resolved]:
    """Every relative date `text` names, in order, resolved against `reference`."""
    found = (_resolve_within_calendar(match, reference) for match in _PHRASE.finditer(text))
    return [resolved for resolved in found if resolved is not None]


def resolve(text: str, reference: date) -> Resolved | None:
    """The first relative date `text` names, or None."""
    match = _PHRASE.search(text)
    return _resolve_within_calendar(match, reference) if match else None


def event_date(text: str, stated: date | None, reference: date | None) -> date | None:
    """`stated` if `text` agrees with it; else the day a relative phrase names; else None.

    A stated day outside every absolute date the text names ("on 3 May 2023") is dropped: the
    text is the evidence, the model's date only a reading of it.
    """
    named = resolve(text, reference) if reference is not None else None
    if named is not None:
        return stated if stated is not None and named.allows(stated) else named.day
    if stated is None:
        return None
    frame = timeframe(text)
    noon = datetime(stated.year, stated.month, stated.day, 12, tzinfo=UTC).timestamp()
    return stated if not frame or frame.contains(noon) else None


def _resolve_within_calendar(match: re.Match[str], reference: date) -> Resolved | None:
    try:
        return _resolve(match, reference)
    except OverflowError:  # "yesterday" on 0001-01-01 names no day of the calendar
        return None


def _resolve(match: re.Match[str], reference: date) -> Resolved:
    phrase = match.group(0)
    one_day = timedelta(days=1)
    if match["before_yesterday"]:
        return _day(phrase, reference - 2 * one_day)
    if match["yesterday"]:
        return _day(phrase, reference - one_day)
    if match["today"]:
        return _day(phrase, reference)
    if match["tomorrow"]:
        return _day(phrase, reference + one_day)
    if match["unit"]:
        return _ago(phrase, match, reference)
    if match["last_weekend"]:
        saturday = _latest_before(reference, 5)
        if saturday + one_day >= reference:  # on a Sunday, "last weekend" is the one before
            saturday -= timedelta(weeks=1)
        return Resolved(phrase, saturday, saturday, saturday + one_day)
    if match["last_week"]:
        # The calendar week (Monday to Sunday) before the reference's; its Monday stands for it.
        monday = reference - timedelta(days=reference.weekday(), weeks=1)
        return Resolved(phrase, monday, monday, monday + 6 * one_day)
    if match["last_month"]:
        end = reference.replace(day=1) - one_day
        return Resolved(phrase, end.replace(day=1), end.replace(day=1), end)
    if match["last_year"]:
        year = reference.year - 1
        return Resolved(phrase, date(year, 1, 1), date(year, 1, 1), date(year, 12, 31))
    # "last Tuesday", "on Tuesday": the latest such day before the reference (in the past, as
    # facts are told); on a Tuesday that is a week ago.
    return _day(phrase, _latest_before(reference, _WEEKDAYS.index(match["weekday"].lower())))


def _ago(phrase: str, match: re.Match[str], reference: date) -> Resolved:
    """ "3 days ago" is that day; weeks, months and years ago are loose, give or take half a unit,
    and "a few" of a unit is anywhere from two to five of them."""
    unit = match["unit"].lower().rstrip("s")
    if match["few"]:
        day = units_before(reference, 3, unit)
        return Resolved(
            phrase, day, units_before(reference, 5, unit), units_before(reference, 2, unit)
        )
    count = match["count"].lower()
    n = int(count) if count.isdigit() else _COUNTS[" ".join(count.split())]
    day = units_before(reference, n, unit)
    if unit == "day":
        return _day(phrase, day)
    half = {"week": 3, "month": 15, "year": 182}[unit]
    return Resolved(phrase, day, day - timedelta(days=half), day + timedelta(days=half))


def units_before(reference: date, n: int, unit: str) -> date:
    """`n` days, weeks, calendar months or years before `reference` (after it when `n` is
    negative); the 31st of a shorter month is its last day."""
    if unit in ("day", "week"):
        return reference - timedelta(days=n * (7 if unit == "week" else 1))
    months = reference.year * 12 + reference.month - 1 - n * (12 if unit == "year" else 1)
    year, month = divmod(months, 12)
    if not 1 <= year <= 9999:
        raise OverflowError("outside the calendar")
    day = min(reference.day, monthrange(year, month + 1)[1])
    return date(year, month + 1, day)


def _latest_before(reference: date, weekday: int) -> date:
    back = (reference.weekday() - weekday - 1) % 7 + 1
    return reference - timedelta(days=back)


def _day(phrase: str, day: date) -> Resolved:
    return Resolved(phrase, day, day, day)
