"""The small pure parts: activity percentiles, the TOML writer, the listen parser, tables."""

from __future__ import annotations

import tomllib

import pytest

from smemctl.table import duration, table
from smemd.api.activity import WINDOW_MINUTES, Activity
from smemd.config import parse_listen
from smemd.tomlwriter import dumps


def test_activity_percentiles_are_within_ten_percent() -> None:
    activity = Activity()
    now = 1_800_000_000.0
    for ms in range(1, 101):  # 1..100 ms
        activity.observe("/r", ms / 1000, now=now)
    (route,) = activity.snapshot(now=now).routes
    assert route.requests == 100
    assert 50 <= route.p50_ms <= 55
    assert 95 <= route.p95_ms <= 104.5


def test_activity_forgets_what_is_older_than_the_window() -> None:
    activity = Activity()
    start = 1_800_000_000.0
    activity.observe("/old", 0.001, now=start)
    activity.observe("/new", 0.001, now=start + 60 * (WINDOW_MINUTES - 1))
    snapshot = activity.snapshot(now=start + 60 * WINDOW_MINUTES)
    assert [r.route for r in snapshot.routes] == ["/new"]
    assert snapshot.requests == 1 and len(snapshot.per_minute) == WINDOW_MINUTES


def test_toml_writer_round_trips_awkward_values() -> None:
    data = {
        "top": "x",
        "table": {
            "s": 'quote " back \\ nl \n tab \t del \x7f é',
            "n": -3,
            "f": 0.5,
            "b": False,
            "l": ["a", 1],
        },
        "nested": {"inner": {"k": "v"}},
        "items": [{"id": "a", "skip": None}, {"id": "b"}],
        "empty": [],
        "odd key": 1,
    }
    parsed = tomllib.loads(dumps(data))
    data["items"] = [{"id": "a"}, {"id": "b"}]  # None is left out
    assert parsed == data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8900", ("127.0.0.1", 8900)),
        ("[::1]:0", ("::1", 0)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_parse_listen(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize(
    "text", ["8900", ":8900", "host:", "host:port", "::1:80", "[nope]:80", "h:65536"]
)
def test_parse_listen_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(text)


def test_table_aligns_numbers_right() -> None:
    assert table([("a", 5), ("bbb", 12)], header=("name", "n")) == "name  n\na      5\nbbb   12"


def test_duration() -> None:
    assert duration(3) == "3s"
    assert duration(3723) == "1h 2m 3s"
    assert duration(90061) == "1d 1h 1m 1s"
