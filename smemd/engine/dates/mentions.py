"""Whether a text states a time at all: a date, a weekday, a month, a year, "yesterday", "two
weeks ago", "for three years", "last weekend".

A question that asks when something happened is usually answered by a passage that says when,
so recall favours such passages for it. Recognising is enough here; nothing is resolved.
"""

from __future__ import annotations

import re

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# Short weekdays are words too ("sun", "wed", "sat"): only after a word that makes them days.
_SHORT_WEEKDAYS = "mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
# "May" is a month only when capitalised next to a date word; "march" and the rest are rarely
# anything else in running text.
_MONTHS = "january|february|march|april|june|july|august|september|october|november|december"
_NUMBER = (
    r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a\s+few|few|several|a\s+couple\s+of|couple\s+of"
)
_UNITS = r"minutes?|hours?|days?|weeks?|weekends?|months?|years?|decades?"

_TIME = re.compile(
    rf"\b(?:{_WEEKDAYS})s?\b"
    rf"|\b(?:last|next|this|on|past)\s+(?:{_SHORT_WEEKDAYS})\b"
    rf"|\b(?:{_MONTHS})\b"
    r"|\b(?:19|20)\d\d\b"
    r"|\bthe\s+\d{1,2}(?:st|nd|rd|th)\b"
    r"|\b(?:yesterday|today|tonight|tomorrow|recently|lately|ago|weekends?)\b"
    r"|\bthe\s+other\s+day\b"
    r"|\b(?:last|next|this|past|coming|previous)\s+"
    r"(?:night|morning|week|month|year|spring|summer|autumn|fall|winter|season)\b"
    rf"|\b(?:{_NUMBER})\s+(?:{_UNITS})\b",
    re.IGNORECASE,
)
_MAY = re.compile(
    r"(?:\b(?:in|of|since|until|by|early|late|last|next|this)\s+|\bmid-)May\b|\bMay\s+\d{1,2}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?May\b"
)


def tells_time(text: str) -> bool:
    """Whether `text` states when (or for how long) something happened."""
    return _TIME.search(text) is not None or _MAY.search(text) is not None


def without_times(text: str) -> str:
    """`text` with what `tells_time` finds in it left out."""
    return _MAY.sub(" ", _TIME.sub(" ", text))
