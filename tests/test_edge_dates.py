"""Dates at the ends of the calendar: refused where they come in, and rows an older build stored
with them read without failing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import aiohttp
import pytest

from smemd import instants
from tests.conftest import Running
from tests.raw_sqlite import connect, database_path
from tests.test_api import assert_error, call
from tests.test_memory_api import settle

NS = "http://smemd/ns/d"
# Valid ISO-8601 text, but instants in UTC years 10000 and 0.
PAST_THE_END = "9999-12-31T23:59:59-14:00"
BEFORE_THE_START = "0001-01-01T00:00:00+14:00"
EDGES = [PAST_THE_END, BEFORE_THE_START]


async def add(running: Running, content: str, **fields: str) -> None:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": content, **fields}
    )
    assert status == 200, body


def test_the_range_is_what_a_datetime_can_show() -> None:
    assert instants.parse("9999-12-31T23:59:59Z") <= instants.LATEST
    assert instants.parse("0001-01-01") == instants.EARLIEST
    for text in EDGES:
        with pytest.raises(instants.InstantError, match="outside the supported range"):
            instants.parse(text)
    with pytest.raises(instants.InstantError, match="expected ISO-8601"):
        instants.parse("next tuesday")
    late = datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-14))).timestamp()
    assert instants.iso(late) == "9999-12-31T23:59:59.000Z"
    assert instants.iso(float("-inf")) == "0001-01-01T00:00:00.000Z"
    assert instants.iso(float("nan")) == "0001-01-01T00:00:00.000Z"


@pytest.mark.parametrize("date", EDGES)
async def test_edge_dates_are_refused_on_every_way_in(running: Running, date: str) -> None:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": "Alex likes tea.", "date": date}
    )
    assert_error(status, body, 400)
    assert body["details"].startswith("$.date: ") and "supported range" in body["details"]

    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch",
        json={"documents": [{"content": "Alex likes tea.", "date": date}]},
    )  # fmt: skip
    assert status == 200 and body["count"] == 0 and body["failed"] == 1
    assert body["results"][0]["details"].startswith("$.documents[0].date: ")

    form = aiohttp.FormData()
    form.add_field("file", b"Alex likes tea.", filename="a.txt", content_type="text/plain")
    form.add_field("date", date)
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/file", data=form)
    assert_error(status, body, 400)
    assert body["details"].startswith("$.date: ")

    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": "tea", "asOf": date}
    )
    assert_error(status, body, 400)
    assert body["details"].startswith("$.asOf: ")

    status, body, _ = await call(
        running.unix, "POST", "http://smemd/v1/compress", json={"q": "tea", "namespace": "d", "asOf": date}
    )  # fmt: skip
    assert_error(status, body, 400)
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/documents")
    assert status == 200 and listed["documents"] == []  # nothing was stored


async def test_an_edge_expiry_is_refused_and_saves_nothing(running: Running) -> None:
    await add(running, "Alex likes tea.")
    await settle(running)
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories")
    (memory,) = listed["memories"]
    status, body, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{memory['id']}", json={"forgetAfter": PAST_THE_END}
    )
    assert_error(status, body, 400)
    assert body["details"].startswith("$.forgetAfter: ")
    status, body, _ = await call(running.unix, "GET", f"{NS}/memories/{memory['id']}")
    assert status == 200 and "expiresAt" not in body


async def test_rows_an_older_build_stored_out_of_range_are_read(running: Running) -> None:
    await add(running, "Alex moved to Portland.", date="2025-03-14")
    await settle(running)
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14))).timestamp()
    early_ts = instants.EARLIEST - 14 * 3600  # 0001-01-01T00:00:00+14:00
    engine = running.daemon.state.engine
    assert engine is not None
    # What an older build let through: written behind the daemon's back, as it would have.
    with connect(database_path(engine)) as db:
        db.execute("UPDATE memories SET expires_at = ?, event_at = ?", [late, early_ts])
        db.execute("UPDATE documents SET content_date = ?", [late])
    status, listed, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", json={"include": {"forgotten": True}}
    )
    assert status == 200, listed
    (memory,) = listed["memories"]
    assert memory["expiresAt"] == "9999-12-31T23:59:59.000Z"
    assert memory["eventAt"] == "0001-01-01T00:00:00.000Z"
    for path in (f"/memories/{memory['id']}", f"/memories/{memory['id']}/history"):
        status, body, _ = await call(running.unix, "GET", NS + path)
        assert status == 200, body
    status, body, _ = await call(running.unix, "GET", f"{NS}/document/{memory['documentId']}")
    assert status == 200, body
    for route in ("compress", "ask"):
        status, body, _ = await call(
            running.unix, "POST", f"http://smemd/v1/{route}",
            json={"q": "Where did Alex move?", "namespace": "d", "threshold": 0},
        )  # fmt: skip
        assert status == 200, body
        assert "(0001-01-01" in body["context"]
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": "in December 9999", "threshold": 0}
    )
    assert status == 200, body
