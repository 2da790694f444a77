"""The memory engine over HTTP, in-process: ingest, versions, time travel, forgetting, deletes."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

import pytest

from tests.conftest import Running
from tests.settling import until_idle
from tests.test_api import assert_error, call

NS = "http://smemd/ns/people"


async def add(running: Running, content: str, **fields: Any) -> dict[str, Any]:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": content, **fields}
    )
    assert status == 200, body
    return body


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def search(running: Running, query: str, **options: Any) -> list[dict[str, Any]]:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/search", json={"query": query, **options}
    )
    assert status == 200, body
    assert isinstance(body["searchTime"], float)
    return body["results"]


async def first_text(running: Running, query: str, **options: Any) -> str:
    """What the first result of a search says: its memory, else its chunk."""
    results = await search(running, query, **options)
    return str(results[0].get("memory") or results[0].get("chunk"))


async def test_a_move_is_a_new_version_and_time_travel_sees_the_old_one(running: Running) -> None:
    await add(running, "Alex lives in Seattle.", id="alex-1")
    await settle(running)
    await asyncio.sleep(0.01)  # asOf below is cut to the millisecond: keep it past Seattle's
    before_move = time.time()
    await asyncio.sleep(0.05)
    await add(running, "Alex moved to Portland.", id="alex-2")
    await settle(running)

    now_results = await search(running, "Where does Alex live?", searchMode="memories", threshold=0)
    assert now_results[0]["memory"] == "Alex moved to Portland."
    assert now_results[0]["isLatest"] is True
    assert all("Seattle" not in r["memory"] for r in now_results)

    iso = (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before_move))
        + f".{int(before_move % 1 * 1000):03d}Z"
    )
    then = await search(
        running, "Where does Alex live?", searchMode="memories", threshold=0, asOf=iso
    )
    assert [r["memory"] for r in then] == ["Alex lives in Seattle."]

    latest = now_results[0]
    status, history, _ = await call(running.unix, "GET", f"{NS}/memories/{latest['id']}/history")
    assert status == 200
    versions = [(m["version"], m["memory"], m["isLatest"]) for m in history["memories"]]
    assert versions == [(1, "Alex lives in Seattle.", False), (2, "Alex moved to Portland.", True)]
    assert history["memories"][0]["validUntil"] is not None


async def test_same_id_same_content_is_idempotent_and_changed_content_is_a_revision(
    running: Running,
) -> None:
    first = await add(running, "Priya works at Stripe.", id="job")
    await settle(running)
    again = await add(running, "Priya works at Stripe.", id="job")
    assert (again["id"], again["status"]) == (first["id"], "done")
    revised = await add(running, "Priya works at Stripe. Priya moved to Berlin in 2024.", id="job")
    assert revised["id"] == first["id"] and revised["status"] == "queued"
    await settle(running)
    status, doc, _ = await call(
        running.unix, "GET", f"{NS}/document/job?include=chunks&include=memories"
    )
    assert status == 200 and doc["system"]["status"] == "done"
    texts = sorted(m["memory"] for m in doc["memories"])
    assert texts == ["Priya moved to Berlin in 2024.", "Priya works at Stripe."]  # no duplicate
    assert [c["content"] for c in doc["chunks"]] == [
        "Priya works at Stripe. Priya moved to Berlin in 2024."
    ]
    status, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs")
    assert jobs["counts"] == {"done": 2}


async def test_forget_restore_and_expiry_of_visibility(running: Running) -> None:
    await add(running, "Sam's favourite colour is green.")
    await settle(running)
    (hit,) = [
        r for r in await search(running, "favourite colour", searchMode="memories", threshold=0)
    ]
    status, body, _ = await call(
        running.unix, "DELETE", f"{NS}/memories", json={"ids": [hit["id"], "mem_nope"]}
    )
    assert status == 200
    assert body["count"] == 1 and body["errors"] == [{"id": "mem_nope", "error": "not found"}]
    assert await search(running, "favourite colour", searchMode="memories", threshold=0) == []
    shown = await search(
        running, "favourite colour", searchMode="memories", threshold=0, include={"forgotten": True}
    )
    assert [r["id"] for r in shown] == [hit["id"]]
    status, memory, _ = await call(running.unix, "GET", f"{NS}/memories/{hit['id']}")
    assert memory["isForgotten"] is True and memory["forgetReason"]
    status, _, _ = await call(running.unix, "POST", f"{NS}/memories/{hit['id']}/restore")
    assert status == 200
    assert [
        r["id"]
        for r in await search(running, "favourite colour", searchMode="memories", threshold=0)
    ] == [hit["id"]]


async def test_an_expired_memory_leaves_recall(running: Running) -> None:
    await add(running, "The door code is 4412.")
    await settle(running)
    (hit,) = await search(running, "door code", searchMode="memories", threshold=0)
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1.5))
    status, memory, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{hit['id']}", json={"forgetAfter": soon}
    )
    assert status == 200 and memory["expiresAt"] and memory["version"] == 1
    assert len(await search(running, "door code", searchMode="memories", threshold=0)) == 1
    await asyncio.sleep(2.0)
    assert await search(running, "door code", searchMode="memories", threshold=0) == []
    shown = await search(
        running, "door code", searchMode="memories", threshold=0, include={"forgotten": True}
    )
    assert [r["id"] for r in shown] == [hit["id"]]
    status, body, _ = await call(running.unix, "PATCH", f"{NS}/memories/{hit['id']}", json={})
    assert_error(status, body, 400)


async def test_forget_by_query_is_a_dry_run_unless_asked(running: Running) -> None:
    await add(running, "The old pricing was 10 dollars a month.")
    await add(running, "Kim enjoys hiking in the Alps.")
    await settle(running)
    body = {"query": "old pricing", "dryRun": True}
    status, preview, _ = await call(running.unix, "DELETE", f"{NS}/memories/semantic", json=body)
    assert status == 200 and preview["count"] == 0
    assert [m["memory"] for m in preview["matches"]] == ["The old pricing was 10 dollars a month."]
    status, done, _ = await call(
        running.unix, "DELETE", f"{NS}/memories/semantic", json={**body, "dryRun": False}
    )
    assert done["count"] == 1
    remaining = await search(running, "pricing hiking", searchMode="memories", threshold=0)
    assert [r["memory"] for r in remaining] == ["Kim enjoys hiking in the Alps."]


async def test_update_memory_versions_and_refuses_an_old_version(running: Running) -> None:
    await add(running, "Lee drives a red car.")
    await settle(running)
    (hit,) = await search(running, "car", searchMode="memories", threshold=0)
    status, new, _ = await call(
        running.unix,
        "PATCH",
        f"{NS}/memories/{hit['id']}",
        json={"memory": "Lee drives a blue car."},
    )
    assert status == 200 and new["version"] == 2 and new["parentId"] == hit["id"]
    status, body, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{hit['id']}", json={"memory": "x"}
    )
    assert_error(status, body, 409)
    assert [
        r["memory"] for r in await search(running, "car", searchMode="memories", threshold=0)
    ] == ["Lee drives a blue car."]


async def test_deleting_a_document_removes_what_came_from_it_and_undoes_its_updates(
    running: Running,
) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    await add(running, "Alex moved to Portland.", id="b")
    await settle(running)
    status, body, _ = await call(
        running.unix, "DELETE", f"{NS}/document", json={"ids": ["b", "missing"]}
    )
    assert status == 200 and body == {
        "count": 1,
        "errors": [{"id": "missing", "error": "not found"}],
    }
    results = await search(running, "Where does Alex live?", threshold=0)
    assert [r.get("memory") or r.get("chunk") for r in results] == [
        "Alex lives in Seattle.",
        "Alex lives in Seattle.",
    ]
    memory = next(r for r in results if "memory" in r)
    assert memory["isLatest"] is True
    status, body, _ = await call(running.unix, "GET", f"{NS}/document/b")
    assert_error(status, body, 404)


async def test_filters_apply_before_ranking(running: Running) -> None:
    await add(
        running, "The launch is planned for March.", metadata={"team": "rocket", "priority": 3}
    )
    await add(
        running, "The launch party is in the garden.", metadata={"team": "events", "priority": 1}
    )
    await settle(running)
    flt = {"operator": "and", "operands": [{"field": "priority", "operator": "gte", "value": 2}]}
    results = await search(running, "launch", threshold=0, filter=flt)
    assert results and all(r["metadata"]["team"] == "rocket" for r in results)
    status, page, _ = await call(
        running.unix, "POST", f"{NS}/list/documents?limit=5", json={"filter": flt}
    )
    assert status == 200 and [d["metadata"]["team"] for d in page["documents"]] == ["rocket"]
    assert page["pagination"] == {"currentPage": 1, "limit": 5, "totalItems": 1, "totalPages": 1}
    assert page["chunks"] == [] and page["memories"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "names"),
    [
        ("POST", "/document", {"content": "x", "colour": 1}, "$.colour"),
        ("POST", "/document", {"content": ""}, "$.content"),
        ("POST", "/document", {"content": 5}, "$.content"),
        ("POST", "/document", {"content": "x", "date": "yesterday"}, "$.date"),
        ("POST", "/document", {"content": "x", "metadata": {"k": {"nested": 1}}}, "$.metadata"),
        ("POST", "/document/batch", {"documents": []}, "$.documents"),
        (
            "POST",
            "/document/batch",
            {"documents": [{"content": "ok"}, {"contnt": "typo"}]},
            "$.documents[1]",
        ),
        ("POST", "/search", {"query": ""}, "$.query"),
        ("POST", "/search", {"query": "   "}, "$.query"),
        ("POST", "/search", {"query": "x", "limit": 0}, "$.limit"),
        ("POST", "/search", {"query": "x", "searchMode": "documents"}, "$.searchMode"),
        ("POST", "/search", {"query": "x", "filter": {"AND": []}}, "$.filter"),
        (
            "POST",
            "/search",
            {
                "query": "x",
                "filter": {
                    "operator": "and",
                    "operands": [{"field": "a", "operator": "gt", "value": "1"}],
                },
            },
            "$.filter.operands[0]",
        ),
        ("POST", "/search", {"query": "x", "asOf": "last week"}, "$.asOf"),
        ("DELETE", "/memories", {"ids": []}, "$.ids"),
        ("DELETE", "/memories/semantic", {"query": "x"}, "dryRun"),
        ("POST", "/list/memories?limit=1000", {}, "?limit"),
        ("POST", "/list/things", {}, "/list/things"),
    ],
)
async def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    running: Running, method: str, path: str, body: dict[str, Any], names: str
) -> None:
    status, reply, _ = await call(running.unix, method, NS + path, json=body)
    assert status in (400, 404), reply
    assert names in reply["details"] or names in reply["error"], reply
    status, listing, _ = await call(running.unix, "GET", "http://smemd/ns")
    assert listing["namespaces"] == []  # not even the namespace was created


@pytest.mark.parametrize("name", ["bad name", "x" * 101, "semi;colon", "ünï"])
async def test_bad_namespace_names_are_400(running: Running, name: str) -> None:
    status, reply, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{name}/document", json={"content": "x"}
    )
    assert_error(status, reply, 400)
    assert "$.namespace" in reply["details"]


async def test_body_over_the_limit_is_413_and_writes_nothing(start_daemon: Any) -> None:
    running = await start_daemon(api__max_body_mb=1)
    body = io.BytesIO(json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode())
    status, reply, _ = await call(
        running.unix, "POST", f"{NS}/document", data=body,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert_error(status, reply, 413)
    status, listing, _ = await call(running.unix, "GET", "http://smemd/ns")
    assert listing["namespaces"] == []


async def test_every_2xx_is_json_and_unknown_ids_are_404(running: Running) -> None:
    for method, path in [
        ("GET", "/document/nope"),
        ("GET", "/memories/nope"),
        ("POST", "/memories/nope/restore"),
    ]:
        status, reply, _ = await call(running.unix, method, NS + path)
        assert_error(status, reply, 404)
    status, reply, response = await call(running.unix, "POST", f"{NS}/profile")
    assert status == 200 and response.content_type == "application/json"
    assert reply == {"profile": {"static": [], "dynamic": [], "buckets": {}}}
