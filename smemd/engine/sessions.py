"""A conversation's sessions, from its turns' dates alone: what a turn is read with when it is
chunked (the turns before it in its session) and what lifts a passage at search (the best other
passage of its session).

A client dates a conversation's turns by their session (every turn of one sitting at one
instant, as LoCoMo, LongMemEval and memorybench do) or by message (each when it was said, as a
chat's log or an agent adding turns as they happen does). One rule serves both: a turn is in the
session of the turn before it when it is dated at most SESSION_GAP_S after it. Half an hour
without a word is the usual end of a session of use; two sittings dated closer than that are
read as one (22 of the 424 between LongMemEval's sessions in the development set; README:
Benchmarks).
"""

from __future__ import annotations

from collections.abc import Iterable

SESSION_GAP_S = 30 * 60.0


def session_starts(dates: Iterable[float]) -> dict[float, float]:
    """Each of `dates` with the first date of its session among them: runs in which each date
    is at most SESSION_GAP_S after the one before."""
    starts: dict[float, float] = {}
    start = previous = None
    for date in sorted(set(dates)):
        if previous is None or start is None or date - previous > SESSION_GAP_S:
            start = date
        starts[date] = start
        previous = date
    return starts
