"""Dates in a query steer recall, through the real daemon: a relative phrase is resolved against
the search's asOf and favours what is dated inside the window it names."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime

from smemd.engine.dates.relative import units_before
from tests.conftest import Running
from tests.test_memory_api import add, first_text, search, settle

CYCLING = "I went cycling along the coast road with Sam."
HIKING = "I went hiking along the river trail with Sam."


def noon(day: date) -> str:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC).isoformat()


async def test_last_month_favours_what_is_dated_in_the_month_before_as_of(
    running: Running,
) -> None:
    # asOf a moment after both documents arrive, so it sees them; the dates are mid-month, far
    # from the edges of the windows whatever day the test runs on.
    asked = time.time() + 1
    mid_month = datetime.fromtimestamp(asked, UTC).date().replace(day=15)
    await add(running, CYCLING, date=noon(units_before(mid_month, 1, "month")))
    await add(running, HIKING, date=noon(units_before(mid_month, 3, "month")))
    await settle(running)
    as_of = datetime.fromtimestamp(asked, UTC).isoformat()

    async def first(query: str) -> str:
        results = await search(running, query, asOf=as_of, threshold=0)
        assert {r.get("memory") or r.get("chunk") for r in results} == {CYCLING, HIKING}
        return str(results[0].get("memory") or results[0].get("chunk"))

    # Without a date the closer text leads; the month the question names turns the order.
    assert await first("What did I do with Sam?") == HIKING
    assert await first("What did I do with Sam last month?") == CYCLING
    assert await first("What did I do with Sam three months ago?") == HIKING


async def test_a_question_asking_when_favours_a_passage_that_says_when(running: Running) -> None:
    says_when = "Sam and I saw the dentist downtown on Tuesday."
    says_not = "Sam and I visited the dentist downtown."
    await add(running, says_not)
    await add(running, says_when)
    await settle(running)

    async def first(query: str) -> str:
        return await first_text(running, query, threshold=0)

    # The closer text leads until the question asks when.
    assert await first("Did Sam and I visit the dentist?") == says_not
    assert await first("When did Sam and I visit the dentist?") == says_when
