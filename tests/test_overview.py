"""`GET /ns/{ns}/overview` against the list route it summarises, and the list route's status and
document filters, on a seeded namespace of the real daemon."""

from __future__ import annotations

from typing import Any

from tests.browser import seed
from tests.conftest import Running, StartDaemon
from tests.test_api import assert_error, call

NS = "http://smemd/ns/people"


async def total(running: Running, body: dict[str, Any]) -> int:
    status, page, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", params={"limit": "1"}, json=body
    )
    assert status == 200, page
    return int(page["pagination"]["totalItems"])


async def test_the_overview_agrees_with_the_list_route(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    live = await seed(running, documents=40)
    status, before, _ = await call(running.unix, "GET", f"{NS}/overview")
    assert status == 200, before
    assert before["memories"]["live"] == live
    status, listed, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", params={"limit": "3"}, json={}
    )
    # Make one of each status: a new version supersedes one memory, another is forgotten.
    changed, gone = listed["memories"][0]["id"], listed["memories"][1]["id"]
    status, _, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{changed}", json={"memory": "Alice moved to Riga."}
    )
    assert status == 200
    status, _, _ = await call(running.unix, "DELETE", f"{NS}/memories", json={"ids": [gone]})
    assert status == 200

    status, seen, _ = await call(running.unix, "GET", f"{NS}/overview")
    assert status == 200, seen
    assert seen["namespace"] == "people"
    was = before["memories"]
    assert seen["memories"] == {
        "live": live - 1,
        "superseded": was["superseded"] + 1,
        "forgotten": was["forgotten"] + 1,
    }
    for name in ("live", "superseded", "forgotten"):
        assert seen["memories"][name] == await total(running, {"status": name})
    assert seen["memories"]["live"] == await total(running, {})
    every = await total(running, {"history": True, "include": {"forgotten": True}})
    assert sum(seen["memories"].values()) == every
    for type_, count in seen["types"].items():
        assert count == await total(running, {"type": type_}), type_
    assert sum(seen["types"].values()) == seen["memories"]["live"]
    assert len(seen["perHour"]) == 48
    assert seen["perHour"][0]["hour"] < seen["perHour"][-1]["hour"]
    assert sum(h["count"] for h in seen["perHour"]) == every  # all stored in this test
    assert seen["documents"] == 40 and seen["jobsOpen"] == 0
    assert sum(b["documents"] for b in seen["factsPerDocument"]) == 40
    assert seen["factsCap"] == 20
    cited = {b["facts"]: b["documents"] for b in seen["factsPerDocument"]}
    one = await total(running, {"document": "doc-007"})
    assert cited.get(one, 0) >= 1


async def test_the_list_route_filters_by_document_and_status(start_daemon: StartDaemon) -> None:
    running = await start_daemon()
    await seed(running, documents=10)
    status, page, _ = await call(
        running.unix, "POST", f"{NS}/list/memories", json={"document": "doc-003"}
    )
    assert status == 200 and page["memories"], page
    status, doc, _ = await call(running.unix, "GET", f"{NS}/document/doc-003")
    assert status == 200
    assert {m["documentId"] for m in page["memories"]} == {doc["id"]}
    assert await total(running, {"document": doc["id"]}) == len(page["memories"])
    assert await total(running, {"document": "no-such-document"}) == 0
    first = page["memories"][0]["id"]
    await call(running.unix, "DELETE", f"{NS}/memories", json={"ids": [first]})
    status, gone, _ = await call(
        running.unix, "POST", f"{NS}/list/memories",
        json={"document": "doc-003", "status": "forgotten"},
    )  # fmt: skip
    assert [m["id"] for m in gone["memories"]] == [first] and gone["memories"][0]["isForgotten"]


async def test_bad_input_gets_a_clear_error(running: Running) -> None:
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/nobody/overview")
    assert_error(status, body, 404)
    assert "nobody" in body["details"]
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/bad%20name/overview")
    assert_error(status, body, 400)
    for wrong, path in (
        ({"status": "lost"}, "$.status"),
        ({"document": ""}, "$.document"),
        ({"document": 7}, "$.document"),
    ):
        status, body, _ = await call(running.unix, "POST", f"{NS}/list/memories", json=wrong)
        assert_error(status, body, 400)
        assert path in body["details"], body
