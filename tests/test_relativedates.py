"""Relative dates in facts, resolved against the document's date."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from smemd.engine.dates.relative import event_date, relative_dates, resolve
from smemd.instants import utc_day

FRIDAY = date(2025, 3, 14)
NEW_YEAR = date(2025, 1, 1)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "reference", "day"),
    [
        ("Last Tuesday's meeting was cancelled", FRIDAY, "2025-03-11"),
        ("We met this past Tuesday.", FRIDAY, "2025-03-11"),
        ("I saw Ana on Monday", FRIDAY, "2025-03-10"),
        ("On Friday the build broke", FRIDAY, "2025-03-07"),  # the latest Friday before this one
        ("last friday", FRIDAY, "2025-03-07"),
        ("last Saturday", FRIDAY, "2025-03-08"),
        ("Yesterday we shipped", FRIDAY, "2025-03-13"),
        ("last night it rained", FRIDAY, "2025-03-13"),
        ("the day before yesterday", FRIDAY, "2025-03-12"),
        ("The release is today", FRIDAY, "2025-03-14"),
        ("this morning the node rebooted", FRIDAY, "2025-03-14"),
        ("the demo is tomorrow", FRIDAY, "2025-03-15"),
        ("3 days ago", FRIDAY, "2025-03-11"),
        ("a day ago", FRIDAY, "2025-03-13"),
        ("ten days ago", FRIDAY, "2025-03-04"),
        ("a couple of days ago", FRIDAY, "2025-03-12"),
        ("two weeks ago", FRIDAY, "2025-02-28"),
        ("a week ago", FRIDAY, "2025-03-07"),
        ("last week", FRIDAY, "2025-03-03"),  # the Monday of the calendar week before
        ("last weekend", FRIDAY, "2025-03-08"),
        ("last weekend", date(2025, 3, 16), "2025-03-08"),  # on a Sunday: not this weekend
        ("last weekend", date(2025, 3, 17), "2025-03-15"),
        ("last month", FRIDAY, "2025-02-01"),
        ("two months ago", FRIDAY, "2025-01-14"),
        ("3 years ago", FRIDAY, "2022-03-14"),
        ("a month ago", date(2025, 3, 31), "2025-02-28"),  # no 31 February: its last day
        ("a few days ago", FRIDAY, "2025-03-11"),
        ("several weeks ago", FRIDAY, "2025-02-21"),
        ("last year", FRIDAY, "2024-01-01"),
        # Year boundaries.
        ("yesterday", NEW_YEAR, "2024-12-31"),
        ("the day before yesterday", NEW_YEAR, "2024-12-30"),
        ("last Tuesday", NEW_YEAR, "2024-12-31"),
        ("on Wednesday", NEW_YEAR, "2024-12-25"),
        ("last Thursday", NEW_YEAR, "2024-12-26"),
        ("5 days ago", NEW_YEAR, "2024-12-27"),
        ("last week", NEW_YEAR, "2024-12-23"),
        ("last month", date(2025, 1, 20), "2024-12-01"),
        ("last year", NEW_YEAR, "2024-01-01"),
        ("tomorrow", date(2024, 12, 31), "2025-01-01"),
        ("yesterday", date(2024, 3, 1), "2024-02-29"),  # a leap day
    ],
)
def test_resolves_against_the_reference(text: str, reference: date, day: str) -> None:
    resolved = resolve(text, reference)
    assert resolved is not None, text
    assert resolved.day == date.fromisoformat(day)
    assert resolved.allows(resolved.day)


@pytest.mark.parametrize(
    "text",
    [
        "Every Tuesday the team meets",  # a habit, not a day
        "She works on Tuesdays",
        "The lastweek file",
        "Ana lives in Lisbon",
        "The yesterdays are gone",
    ],
)
def test_no_relative_date(text: str) -> None:
    assert resolve(text, FRIDAY) is None


def test_spans_of_loose_phrases() -> None:
    week = resolve("last week", FRIDAY)
    assert week is not None and (week.earliest, week.latest) == (
        date(2025, 3, 3),
        date(2025, 3, 9),
    )
    month = resolve("last month", date(2024, 3, 5))
    assert month is not None and month.latest == date(2024, 2, 29)
    ago = resolve("two weeks ago", FRIDAY)
    assert ago is not None and ago.allows(date(2025, 3, 2)) and not ago.allows(date(2025, 3, 4))
    months = resolve("two months ago", FRIDAY)
    assert months is not None and (months.earliest, months.latest) == (
        date(2024, 12, 30),
        date(2025, 1, 29),
    )
    few = resolve("a few days ago", FRIDAY)
    assert few is not None and (few.earliest, few.latest) == (date(2025, 3, 9), date(2025, 3, 12))


def test_a_phrase_before_the_calendar_names_nothing() -> None:
    assert resolve("two years ago", date(1, 6, 1)) is None


def test_every_phrase_in_order_and_the_longest_wins() -> None:
    found = relative_dates("The day before yesterday and last weekend, not last week", FRIDAY)
    assert [(r.phrase.lower(), r.day.isoformat()) for r in found] == [
        ("the day before yesterday", "2025-03-12"),
        ("last weekend", "2025-03-08"),
        ("last week", "2025-03-03"),
    ]


@pytest.mark.parametrize(
    ("text", "stated", "reference", "expected"),
    [
        # Filled when the model gave none; corrected when it contradicts the phrase.
        ("Last Tuesday's meeting was cancelled", None, FRIDAY, "2025-03-11"),
        ("Last Tuesday's meeting was cancelled", "2025-03-04", FRIDAY, "2025-03-11"),
        ("Last Tuesday's meeting was cancelled", "2025-03-11", FRIDAY, "2025-03-11"),
        # A loose phrase keeps a stated day it allows.
        ("Ana moved last week", "2025-03-05", FRIDAY, "2025-03-05"),
        ("Ana moved last week", "2025-03-12", FRIDAY, "2025-03-03"),
        # Without a reference a relative phrase proves nothing.
        ("Ana moved yesterday", "2025-03-05", None, "2025-03-05"),
        ("Ana moved yesterday", None, None, None),
        # Absolute dates in the text check the stated one (timeframe's windows, with slack).
        ("Ana moved to Porto on 3 May 2023", "2023-05-03", FRIDAY, "2023-05-03"),
        ("Ana moved to Porto on 3 May 2023", "2024-05-03", FRIDAY, None),
        ("Ana moved to Porto in June", "2019-06-20", FRIDAY, "2019-06-20"),
        ("Ana moved to Porto in June", "2019-09-20", FRIDAY, None),
        # No date in the text: the model's reading stands.
        ("Ana moved to Porto", "2022-01-02", FRIDAY, "2022-01-02"),
        ("Ana lives in Porto", None, FRIDAY, None),
    ],
)
def test_event_date_checks_or_fills(
    text: str, stated: str | None, reference: date | None, expected: str | None
) -> None:
    given = date.fromisoformat(stated) if stated else None
    result = event_date(text, given, reference)
    assert result == (date.fromisoformat(expected) if expected else None)


def test_utc_day() -> None:
    late = datetime(2024, 12, 31, 23, 59, tzinfo=UTC).timestamp()
    assert utc_day(late) == date(2024, 12, 31)
    assert utc_day(late + 120) == NEW_YEAR
