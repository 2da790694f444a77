"""Periods a question names that are not one day ("this month", "the past two weeks", "in the
spring", "recently"), resolved against the day it is asked on.

They only ever widen what recall favours, so they are never a fact's date: "recently" says
nothing about which day something happened. Seasons are the northern hemisphere's meteorological
ones (spring is March to May, winter December to February). Days are UTC days, as in `relative`.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

import msgspec

from smemd.engine.dates.relative import units_before

# "Recently" reaches about two months back: further than "last month", nearer than "this year".
RECENT = timedelta(days=60)

_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
_SEASON_NAMES = "spring|summer|autumn|fall|winter"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)"
_COUNTS = {"couple of": 2, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "twelve": 12}  # fmt: skip
_COUNT = (
    r"(?:(?P<count>\d{1,3}|" + "|".join(_COUNTS).replace(" ", r"\s+") + r")|(?P<few>few|several))"
)

# A season counts only with a word that makes it a time ("in the summer", "last winter",
# "spring 2023"): "summer camp" and "a winter coat" name no period.
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<recent>recently|lately|of\s+late|these\s+days|nowadays|in\s+recent\s+(?:days|weeks|months))"
    rf"|(?:the\s+)?(?:past|last)\s+{_COUNT}\s+(?P<unit>days|weeks|months|years)"
    r"|(?:the\s+)?past\s+(?P<past_unit>week|month|year)"
    r"|(?:earlier\s+|so\s+far\s+)?this\s+(?P<this_unit>week|month|year)"
    rf"|(?:(?:in|during)\s+)?(?:the\s+)?(?P<season>{_SEASON_NAMES})\s+(?:of\s+)?{_YEAR}"
    r"|(?P<which>last|this\s+past|past|this|in\s+the|during\s+the|over\s+the|in|during)\s+"
    rf"(?P<named_season>{_SEASON_NAMES})"
    r")\b",
    re.IGNORECASE,
)


class Period(msgspec.Struct, frozen=True):
    """A phrase and the days it covers, `first`..`last` inclusive; `loose` when its edges are
    vague ("recently", a season) rather than the calendar's."""

    phrase: str
    first: date
    last: date
    loose: bool


def periods(text: str, reference: date) -> list[Period]:
    """Every period `text` names, in order, resolved against `reference`."""
    found: list[Period] = []
    for match in _PHRASE.finditer(text):
        try:
            found += _resolve(match, reference)
        except (OverflowError, ValueError):  # a period the calendar cannot hold
            continue
    return found


def blanked(text: str) -> str:
    """`text` with every period phrase blanked out, so the year in "the summer of 2022" is not
    read again as all of 2022."""
    return _PHRASE.sub(lambda m: " " * len(m.group(0)), text)


def _resolve(match: re.Match[str], reference: date) -> list[Period]:
    phrase = match.group(0)
    if match["recent"]:
        return [Period(phrase, reference - RECENT, reference, loose=True)]
    if match["unit"]:
        unit = match["unit"].lower()[:-1]
        if match["few"]:  # "the past few weeks": up to five of them
            n, loose = 5, True
        else:
            count = " ".join(match["count"].lower().split())
            n, loose = (int(count) if count.isdigit() else _COUNTS[count]), False
        return [Period(phrase, units_before(reference, n, unit), reference, loose)]
    if match["past_unit"]:  # "the past week": the seven days up to today
        unit = match["past_unit"].lower()
        return [Period(phrase, units_before(reference, 1, unit), reference, loose=False)]
    if match["this_unit"]:
        unit = match["this_unit"].lower()
        if unit == "week":
            first = reference - timedelta(days=reference.weekday())
        else:
            first = reference.replace(month=1 if unit == "year" else reference.month, day=1)
        return [Period(phrase, first, reference, loose=False)]
    if match["season"]:
        return _of_year(phrase, match["season"].lower(), int(match["year"]))
    return [_recent_season(phrase, match, reference)]


def _of_year(phrase: str, season: str, year: int) -> list[Period]:
    """A named year's season; its winter months are the two it opens with and its December."""
    if season != "winter":
        first = date(year, _SEASONS[season], 1)
        return [Period(phrase, first, units_before(first, -3, "month") - timedelta(days=1), True)]
    return [
        Period(phrase, date(year, 1, 1), date(year, 3, 1) - timedelta(days=1), True),
        Period(phrase, date(year, 12, 1), date(year, 12, 31), True),
    ]


def _recent_season(phrase: str, match: re.Match[str], reference: date) -> Period:
    """ "Last summer" is the latest summer that has ended; "this summer" and "in the summer" the
    latest that has begun, so asked in July they mean this one."""
    season = match["named_season"].lower()
    first = date(reference.year, _SEASONS[season], 1)
    ended = " ".join(match["which"].lower().split()) in ("last", "this past", "past")
    while first > reference or (ended and units_before(first, -3, "month") > reference):
        first = units_before(first, 1, "year")
    return Period(phrase, first, units_before(first, -3, "month") - timedelta(days=1), loose=True)
