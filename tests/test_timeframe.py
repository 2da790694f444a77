"""Dates a query names, as the windows recall favours, and the instant a log's caption tells."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from smemd.engine.dates.absolute import timeframe
from smemd.engine.dates.stated import told_instant


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What did she do on 8 May, 2023?", "2023-05-10", "2023-05-12"),
        ("What happened on May 8th 2023", "2023-05-05", "2023-05-04"),
        ("anything from 2023-05-08?", "2023-05-08T23:00", "2023-05-20"),
        ("Where did they go in June 2023?", "2023-06-30", "2023-07-05"),
        ("What changed in 2022?", "2022-12-31", "2023-01-05"),
        ("Which trip was in June?", "2019-06-15", "2019-08-15"),
        # "The week before" a date reaches back a week and keeps the date, where it is told.
        ("Where was Tim in the week before 16 November 2023?", "2023-11-08", "2023-11-01"),
        ("Where was Tim in the week before 16 November 2023?", "2023-11-17", "2023-11-21"),
        ("What happened the day after 3 May 2023?", "2023-05-07", "2023-05-08"),
    ],
)
def test_named_dates_become_windows_with_slack(query: str, inside: str, outside: str) -> None:
    frame = timeframe(query)
    assert frame
    assert frame.contains(at(inside))
    assert not frame.contains(at(outside))


@pytest.mark.parametrize(
    "query",
    [
        "What did she do last week?",
        "May I ask what he likes?",
        "on 31 February 2023",
        "",
        "Room 2023",
        "on 0001-01-01",  # its slack would start before the calendar does
        "9999-12-31",
        "the week before 0001-01-05",
    ],
)
def test_no_absolute_date_means_no_window(query: str) -> None:
    assert not timeframe(query)


def test_a_day_is_not_read_again_as_its_month() -> None:
    frame = timeframe("on 3 May 2023")
    assert len(frame.spans) == 1 and not frame.months


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("Here is the date the following session took place: 1:56 pm on 8 May, 2023",
         "2023-05-08T13:56:00+00:00"),
        ("12:30 am on 1 January, 2024", "2024-01-01T00:30:00+00:00"),
        ("12 pm, March 3 2022", "2022-03-03T12:00:00+00:00"),
        ("Session of 2023-05-08 9:05", "2023-05-08T09:05:00+00:00"),
        ("Session of 2023-05-08T09:05:00+02:00", "2023-05-08T07:05:00+00:00"),
        ("31 February 2023, then 1 March 2023", "2023-03-01T00:00:00+00:00"),
        ("at 13:56", None),  # no day
        ("in May 2023", None),  # a month is no day
    ],
)  # fmt: skip
def test_a_caption_tells_the_instant_of_the_day_and_time_it_names(
    text: str, instant: str | None
) -> None:
    told = told_instant(text)
    assert (told and datetime.fromtimestamp(told, UTC).isoformat()) == instant
