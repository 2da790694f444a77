"""What a question says about time, resolved against the instant it is asked at: the windows
recall favours, and whether it asks for a time at all.

Each kind of phrase has its reader: absolute dates `absolute`, days relative to the question
`relative`, spans and seasons `periods`. A window from a date or a day is sharp; one from a loose
period ("recently", "in the spring") reaches further and counts for less, as its edges are a
guess.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import msgspec

from smemd.engine.dates.absolute import SLACK, Timeframe, timeframe
from smemd.engine.dates.periods import blanked, periods
from smemd.engine.dates.relative import relative_dates
from smemd.instants import utc_day

LOOSE = 0.5  # what being inside a loose window counts, against 1 for a sharp one
LOOSE_SLACK = timedelta(days=14)

# Questions that ask for a time: "when did…", "how long ago…", "what year…". "When" only with
# an auxiliary after it: "what did she do when she moved" asks for a thing, not a time.
_ASKS_TIME = re.compile(
    r"\bwhen\s+(?:did|do|does|was|were|is|are|will|would|has|have|had)\b"
    r"|\bwhen's\b|\bsince\s+when\b|\bhow\s+long\b|\bwhat\s+time\b"
    r"|\b(?:what|which)\s+(?:year|month|day|date|week|weekend|season|decade)\b"
    r"|\bhow\s+many\s+(?:days|weeks|months|years)\b",
    re.IGNORECASE,
)


class Windows(msgspec.Struct, frozen=True):
    """Sharp windows and months (a `Timeframe`), loose windows [start, end) in Unix seconds,
    and whether the question asks for a time."""

    sharp: Timeframe = Timeframe()
    loose: tuple[tuple[float, float], ...] = ()
    asks_time: bool = False

    def __bool__(self) -> bool:
        return bool(self.sharp or self.loose)

    def weight(self, t: float) -> float:
        """1 inside a sharp window, LOOSE inside only a loose one, else 0."""
        if self.sharp.contains(t):
            return 1.0
        return LOOSE if any(start <= t < end for start, end in self.loose) else 0.0


def query_windows(text: str, reference: float) -> Windows:
    """The windows `text` names; relative ones are resolved against `reference` (Unix seconds)."""
    day = utc_day(reference)
    absolute = timeframe(blanked(text))
    sharp = list(absolute.spans)
    loose: list[tuple[float, float]] = []
    for resolved in relative_dates(text, day):
        sharp += _instants(resolved.earliest, resolved.latest, SLACK)
    for period in periods(text, day):
        if period.loose:
            loose += _instants(period.first, period.last, LOOSE_SLACK)
        else:
            sharp += _instants(period.first, period.last, SLACK)
    return Windows(Timeframe(tuple(sharp), absolute.months), tuple(loose), asks_time(text))


def asks_time(text: str) -> bool:
    """Whether a question asks when something happened or how long ago."""
    return _ASKS_TIME.search(text) is not None


def _instants(first: date, last: date, slack: timedelta) -> list[tuple[float, float]]:
    """Days `first`..`last` as one window with `slack` each side; none past the calendar's ends."""
    try:
        start = datetime(first.year, first.month, first.day, tzinfo=UTC) - slack
        end = datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1) + slack
    except OverflowError:
        return []
    return [(start.timestamp(), end.timestamp())]
