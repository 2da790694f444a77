"""What a question says about time, resolved against a fixed instant it is asked at."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from smemd.engine.dates.mentions import tells_time
from smemd.engine.dates.periods import periods
from smemd.engine.dates.windows import LOOSE, asks_time, query_windows
from smemd.instants import EARLIEST, LATEST

# Asked on Monday 2025-12-01 at noon, UTC.
ASKED = datetime(2025, 12, 1, 12, tzinfo=UTC).timestamp()
ASKED_DAY = date(2025, 12, 1)


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What did I do last month?", "2025-11-15", "2025-10-20"),
        ("What did I do last month?", "2025-11-02", "2025-12-08"),
        ("What did Ana do two weeks ago?", "2025-11-17", "2025-11-05"),
        ("Who called yesterday?", "2025-11-30", "2025-11-20"),
        ("What happened last weekend?", "2025-11-29", "2025-11-18"),
        ("What did we cook a few days ago?", "2025-11-27", "2025-11-15"),
        ("What did I read this month?", "2025-12-01", "2025-11-20"),
        ("What changed in the past two weeks?", "2025-11-20", "2025-11-10"),
        ("What did she do three months ago?", "2025-09-01", "2025-07-15"),
    ],
)
def test_relative_phrases_are_sharp_windows(query: str, inside: str, outside: str) -> None:
    windows = query_windows(query, ASKED)
    assert windows
    assert windows.weight(at(inside)) == 1.0
    assert windows.weight(at(outside)) == 0.0


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("What have I been reading recently?", "2025-10-10", "2025-08-01"),
        ("Anything new lately?", "2025-11-30", "2025-06-01"),
        ("Where did we go in the spring?", "2025-04-20", "2025-07-01"),
        ("Where did we go last summer?", "2025-08-31", "2024-07-01"),
        ("Where did we go in the summer of 2023?", "2023-07-01", "2023-11-01"),
        ("What did they do over the last few months?", "2025-08-01", "2025-04-01"),
    ],
)
def test_fuzzy_phrases_are_loose_windows(query: str, inside: str, outside: str) -> None:
    windows = query_windows(query, ASKED)
    assert windows.weight(at(inside)) == LOOSE
    assert windows.weight(at(outside)) == 0.0


def test_a_loose_window_reaches_past_its_edges() -> None:
    spring = query_windows("in the spring", ASKED)
    assert spring.weight(at("2025-06-10")) == LOOSE  # two weeks of slack after May
    assert spring.weight(at("2025-06-20")) == 0.0


def test_a_season_with_a_year_is_not_the_whole_year() -> None:
    windows = query_windows("What did she do in the summer of 2022?", ASKED)
    assert windows.weight(at("2022-07-10")) == LOOSE
    assert windows.weight(at("2022-02-10")) == 0.0


def test_absolute_dates_still_win_and_do_not_depend_on_the_reference() -> None:
    for reference in (ASKED, at("2030-01-01")):
        windows = query_windows("What did she do on 8 May, 2023?", reference)
        assert windows.weight(at("2023-05-09")) == 1.0


def test_the_reference_decides_what_a_relative_phrase_means() -> None:
    windows = query_windows("What did I do last month?", at("2024-03-10"))
    assert windows.weight(at("2024-02-29")) == 1.0
    assert windows.weight(at("2025-11-15")) == 0.0


@pytest.mark.parametrize(
    "query",
    ["What does Ana like?", "What is her favourite winter sport?", "Does he go to summer camp?"],
)
def test_no_time_named_means_no_window(query: str) -> None:
    assert not query_windows(query, ASKED)


@pytest.mark.parametrize(
    ("text", "reference", "first", "last"),
    [
        ("in the spring", ASKED_DAY, "2025-03-01", "2025-05-31"),
        ("this summer", date(2025, 7, 10), "2025-06-01", "2025-08-31"),  # the one under way
        ("last summer", date(2025, 7, 10), "2024-06-01", "2024-08-31"),  # the last one ended
        ("last winter", date(2025, 1, 10), "2023-12-01", "2024-02-29"),
        ("during the winter", date(2025, 1, 10), "2024-12-01", "2025-02-28"),
        ("the autumn of 2021", ASKED_DAY, "2021-09-01", "2021-11-30"),
        ("in the fall 2021", ASKED_DAY, "2021-09-01", "2021-11-30"),
        ("earlier this year", ASKED_DAY, "2025-01-01", "2025-12-01"),
        ("this week", date(2025, 12, 4), "2025-12-01", "2025-12-04"),
        ("the past week", ASKED_DAY, "2025-11-24", "2025-12-01"),
        ("recently", ASKED_DAY, "2025-10-02", "2025-12-01"),
    ],
)
def test_periods(text: str, reference: date, first: str, last: str) -> None:
    [period] = periods(text, reference)
    assert (period.first, period.last) == (date.fromisoformat(first), date.fromisoformat(last))


def test_winter_of_a_year_is_its_winter_months() -> None:
    found = periods("winter 2024", ASKED_DAY)
    assert [(p.first.isoformat(), p.last.isoformat()) for p in found] == [
        ("2024-01-01", "2024-02-29"),
        ("2024-12-01", "2024-12-31"),
    ]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("when is the concert", True),
        ("How long ago did they move?", True),
        ("What year did Ana start her job?", True),
        ("In which month did he adopt the dog?", True),
        ("How many weeks passed between the two trips?", True),
        ("What did she do when she moved to Porto?", False),
        ("Where does Ana live?", False),
        ("What is the name of her dog?", False),
    ],
)
def test_asks_time(question: str, asks: bool) -> None:
    assert asks_time(question) is asks
    assert query_windows(question, ASKED).asks_time is asks


@pytest.mark.parametrize(
    ("text", "tells"),
    [
        ("I went to the support group yesterday.", True),
        ("We adopted Toby two weeks ago!", True),
        ("I've had them for 3 years now.", True),
        ("Last Fri I took the kids to a pottery workshop.", True),
        ("It was on the 15th, after my trip.", True),
        ("See you next weekend", True),
        ("I met her in mid-May.", True),
        ("Back in 2019 I started in IT.", True),
        ("Every Saturday we swim.", True),
        ("The architecture was amazing!", False),
        ("May I ask what you think?", False),
        ("The sun was out and we sat by the lake.", False),
        ("What a lovely picture!", False),
    ],
)
def test_tells_time(text: str, tells: bool) -> None:
    assert tells_time(text) is tells


@pytest.mark.parametrize("reference", [EARLIEST, LATEST])
def test_at_the_calendars_ends_a_phrase_names_what_it_can(reference: float) -> None:
    text = (
        "yesterday, tomorrow, 999 years ago, a few months ago, last winter, this summer, "
        "recently, the past 12 years, earlier this year, the week before 0001-01-02"
    )
    windows = query_windows(text, reference)
    assert windows.weight(reference) >= 0.0
