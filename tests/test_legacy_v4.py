"""The legacy v4 routes through the real daemon: raw requests for each route and its bad input,
and the real SDK 3.62.0 (`tests/sdk3.py`) for what it can call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.sdk3 import run_sdk3
from tests.settling import until_idle
from tests.test_api import assert_error, call

KEY = "sdk3-test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
SCOPED = {"Authorization": "Bearer scoped-secret-0001"}  # may use "alex" only
NS = "alex"


@pytest.fixture
async def daemon_v4(start_daemon: StartDaemon, short_dir: Path) -> Running:
    api = f'token = "{KEY}"\n' + token_table("scoped", "scoped-secret-0001", "write", [NS])
    return await start_daemon(config_with_tokens(short_dir, api))


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def v4(
    running: Running, method: str, path: str, body: Any, headers: dict[str, str] = AUTH
) -> tuple[int, Any]:
    status, out, _ = await call(running.tcp, method, running.url(path), json=body, headers=headers)
    return status, out


async def local(running: Running, method: str, path: str, body: Any = None) -> Any:
    """A 200 reply's body, over the socket (v5 and smem's routes)."""
    status, out, _ = await call(running.unix, method, "http://smemd" + path, json=body)
    assert status == 200, out
    return out


async def add_v5(running: Running, content: str, ns: str = NS, **fields: Any) -> str:
    status, out = await v4(running, "POST", f"/ns/{ns}/document", {"content": content, **fields})
    assert status == 200, out
    return str(out["id"])


async def seed(running: Running) -> None:
    await add_v5(running, "Alex lives in Seattle near the lake.", metadata={"topic": "home"})
    await add_v5(running, "Alex works at Stripe as a backend engineer.", metadata={"topic": "work"})
    await add_v5(running, "Alex prefers morning meetings over afternoon ones.")
    await add_v5(running, "Sam lives in Lisbon.", ns="sam")
    await settle(running)


async def test_search_finds_what_v5_wrote_in_each_mode(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    query = {"q": "where does Alex live?", "containerTag": NS, "threshold": 0.2}
    status, out = await v4(daemon_v4, "POST", "/v4/search", query)
    assert status == 200, out
    assert set(out) == {"results", "timing", "total"} and out["total"] == len(out["results"])
    assert out["results"], out
    top = out["results"][0]
    assert "Seattle" in top["memory"] and "chunk" not in top, top
    assert {"id", "similarity", "updatedAt", "metadata", "version"} <= set(top)
    assert top["metadata"]["topic"] == "home" and top["version"] == 1
    assert all("memory" in r and "chunk" not in r for r in out["results"])  # memories by default
    assert not any("Lisbon" in r["memory"] for r in out["results"])  # another tag's namespace

    status, out = await v4(daemon_v4, "POST", "/v4/search", {**query, "searchMode": "documents"})
    assert status == 200, out
    assert out["results"] and all("chunk" in r and "memory" not in r for r in out["results"])
    assert "Seattle" in out["results"][0]["chunk"]

    # What memorybench sends: hybrid, with chunks and summaries.
    bench = {
        **query,
        "searchMode": "hybrid",
        "limit": 10,
        "include": {"chunks": True, "summaries": True},
    }
    status, out = await v4(daemon_v4, "POST", "/v4/search", bench)
    assert status == 200, out
    top = out["results"][0]
    assert "Seattle" in top["memory"], out
    assert [c["content"] for c in top["chunks"]] == ["Alex lives in Seattle near the lake."]
    assert top["chunks"][0]["position"] == 0 and top["chunks"][0]["documentId"].startswith("doc_")
    assert 0 < top["chunks"][0]["score"] <= 1
    assert top["documents"][0]["id"] == top["chunks"][0]["documentId"]
    assert "title" not in top["documents"][0]  # summaries alone: no title, type, metadata
    # The ranking is v5's, result for result: a chunk keeps its own place beside its memory's.
    status, v5, _ = await call(
        daemon_v4.unix, "POST", f"http://smemd/ns/{NS}/search",
        json={"query": bench["q"], "searchMode": "hybrid", "limit": 10, "threshold": 0.3},
    )  # fmt: skip
    assert status == 200
    assert [r["id"] for r in out["results"]] == [r["id"] for r in v5["results"]]

    status, out = await v4(
        daemon_v4, "POST", "/v4/search", {**query, "include": {"documents": True}, "limit": 1}
    )
    assert status == 200 and len(out["results"]) == 1, out
    assert out["results"][0]["documents"][0]["metadata"]["topic"] == "home"


async def test_v4_update_is_a_v5_version_and_search_shows_its_context(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    status, out = await v4(
        daemon_v4, "PATCH", "/v4/memories",
        {"containerTag": NS, "content": "Alex lives in Seattle near the lake.",
         "newContent": "Alex lives in Portland now.", "metadata": {"source": "v4"}},
    )  # fmt: skip
    assert status == 200, out
    assert out["memory"] == "Alex lives in Portland now." and out["version"] == 2
    assert out["parentMemoryId"] and out["rootMemoryId"] == out["parentMemoryId"]
    assert out["metadata"] == {"source": "v4"} and out["forgetAfter"] is None
    new_id, old_id = out["id"], out["parentMemoryId"]

    got = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{new_id}?include=related")
    assert (
        got["version"] == 2 and got["isLatest"] and got["memory"] == "Alex lives in Portland now."
    )
    assert [p["id"] for p in got["included"]["related"]["parents"]] == [old_id]
    got = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{old_id}")
    assert got["isLatest"] is False, got

    query = {"q": "Where does Alex live?", "containerTag": NS, "threshold": 0.2,
             "include": {"relatedMemories": True}}  # fmt: skip
    status, out = await v4(daemon_v4, "POST", "/v4/search", query)
    assert status == 200, out
    top = out["results"][0]
    assert top["id"] == new_id and top["rootMemoryId"] == old_id and top["version"] == 2, out
    assert top["context"]["parents"][0]["memory"] == "Alex lives in Seattle near the lake."
    assert top["context"]["parents"][0]["version"] == -1
    assert top["context"]["parents"][0]["relation"] == "updates"
    assert top["context"]["children"] == []
    assert old_id not in {r["id"] for r in out["results"]}  # the old version left recall

    # The old version is no longer the latest: naming it is a conflict, its text finds nothing.
    status, out = await v4(
        daemon_v4, "PATCH", "/v4/memories",
        {"containerTag": NS, "id": old_id, "newContent": "Alex lives in Oslo."},
    )  # fmt: skip
    assert_error(status, out, 409)
    status, out = await v4(
        daemon_v4, "PATCH", "/v4/memories",
        {"containerTag": NS, "content": "Alex lives in Seattle near the lake.", "newContent": "x"},
    )  # fmt: skip
    assert_error(status, out, 404)

    # forgetAfter: kept when left out, cleared by null.
    expiry = {"containerTag": NS, "id": new_id, "newContent": "Alex lives in Portland, Oregon.",
              "forgetAfter": "2099-01-01T00:00:00Z", "temporalContext": {"eventDate": ["2025-03-01"]}}  # fmt: skip
    status, out = await v4(daemon_v4, "PATCH", "/v4/memories", expiry)
    assert status == 200 and out["forgetAfter"] == "2099-01-01T00:00:00.000Z", out
    assert out["metadata"] == {"source": "v4", "temporalContext": {"eventDate": ["2025-03-01"]}}
    status, out = await v4(
        daemon_v4,
        "PATCH",
        "/v4/memories",
        {"containerTag": NS, "id": out["id"], "newContent": "A."},
    )
    assert status == 200 and out["forgetAfter"] == "2099-01-01T00:00:00.000Z", out
    status, out = await v4(
        daemon_v4, "PATCH", "/v4/memories",
        {"containerTag": NS, "id": out["id"], "newContent": "B.", "forgetAfter": None},
    )  # fmt: skip
    assert status == 200 and out["forgetAfter"] is None and out["version"] == 5, out


async def test_forget_by_id_and_by_content(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    status, out = await v4(
        daemon_v4, "DELETE", "/v4/memories",
        {"containerTag": NS, "content": "Alex works at Stripe as a backend engineer.", "reason": "left"},
    )  # fmt: skip
    assert status == 200 and out["forgotten"] is True, out
    got = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{out['id']}")
    assert got["isForgotten"] is True and got["forgetReason"] == "left", got
    query = {"q": "Where does Alex work?", "containerTag": NS, "threshold": 0}
    status, found = await v4(daemon_v4, "POST", "/v4/search", query)
    assert status == 200, found
    assert out["id"] not in {r["id"] for r in found["results"]}
    query["include"] = {"forgottenMemories": True}
    status, found = await v4(daemon_v4, "POST", "/v4/search", query)
    assert status == 200, found
    assert out["id"] in {r["id"] for r in found["results"]}, found

    listed = await local(daemon_v4, "POST", f"/ns/{NS}/list/memories", {})
    some = next(m for m in listed["memories"] if "Seattle" in m["memory"])
    status, out = await v4(
        daemon_v4, "DELETE", "/v4/memories", {"containerTag": NS, "id": some["id"]}
    )
    assert (status, out) == (200, {"id": some["id"], "forgotten": True})
    status, out = await v4(
        daemon_v4, "DELETE", "/v4/memories", {"containerTag": NS, "id": "mem_nope"}
    )
    assert_error(status, out, 404)
    # A memory of another namespace is unknown here.
    listed = await local(daemon_v4, "POST", "/ns/sam/list/memories", {})
    sams = listed["memories"][0]["id"]
    status, out = await v4(daemon_v4, "DELETE", "/v4/memories", {"containerTag": NS, "id": sams})
    assert_error(status, out, 404)


async def test_forget_matching_previews_then_forgets(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    ask = {"containerTag": NS, "query": "Alex's job at Stripe", "threshold": 0.3, "dryRun": True}
    status, out = await v4(daemon_v4, "POST", "/v4/memories/forget-matching", ask)
    assert status == 200, out
    assert out["dryRun"] is True and out["forgetBatchId"] is None and "forgotten" not in out
    assert out["count"] == len(out["candidates"]) >= 1
    assert any("Stripe" in c["memory"] for c in out["candidates"])
    assert all(0 <= c["score"] <= 1 for c in out["candidates"])
    assert "would be forgotten" in out["summary"]
    status, out = await v4(
        daemon_v4, "POST", "/v4/memories/forget-matching", {**ask, "dryRun": False, "maxForget": 1}
    )
    assert status == 200 and out["count"] == 1 and out["forgetBatchId"], out
    gone = out["forgotten"][0]["id"]
    got = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{gone}")
    assert got["isForgotten"] is True

    listed = await local(daemon_v4, "POST", f"/ns/{NS}/list/memories", {})
    ids = [m["id"] for m in listed["memories"]]
    by_ids = {"containerTag": NS, "ids": [*ids, "mem_nope"], "dryRun": True}
    status, out = await v4(daemon_v4, "POST", "/v4/memories/forget-matching", by_ids)
    assert status == 200 and sorted(c["id"] for c in out["candidates"]) == sorted(ids), out
    status, out = await v4(
        daemon_v4, "POST", "/v4/memories/forget-matching", {**by_ids, "dryRun": False}
    )
    assert status == 200 and out["count"] == len(ids), out
    listed = await local(daemon_v4, "POST", f"/ns/{NS}/list/memories", {})
    assert listed["memories"] == []


async def test_add_memories_answers_once_they_exist(daemon_v4: Running) -> None:
    body = {
        "containerTag": NS,
        "memories": [
            {"content": "Alex is allergic to peanuts.", "isStatic": True, "metadata": {"kind": "health"}},
            {"content": "Alex is training for a marathon in October."},
        ],
    }  # fmt: skip
    status, out = await v4(daemon_v4, "POST", "/v4/memories", body)
    assert status == 200, out
    assert out["documentId"].startswith("doc_")
    made = {m["memory"]: m for m in out["memories"]}
    assert set(made) == {
        "Alex is allergic to peanuts.",
        "Alex is training for a marathon in October.",
    }
    assert made["Alex is allergic to peanuts."]["isStatic"] is True
    assert made["Alex is training for a marathon in October."]["isStatic"] is False
    assert all(m["id"].startswith("mem_") and m["createdAt"].endswith("Z") for m in made.values())
    # At once, with no wait: through v5, and in search.
    peanuts = made["Alex is allergic to peanuts."]["id"]
    got = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{peanuts}")
    assert got["isStatic"] is True, got
    assert got["metadata"]["kind"] == "health" and got["metadata"]["containerTags"] == [NS]
    status, found = await v4(
        daemon_v4, "POST", "/v4/search", {"q": "what is Alex allergic to", "containerTag": NS}
    )
    assert status == 200, found
    assert found["results"][0]["id"] == peanuts, found
    status, prof = await v4(daemon_v4, "POST", "/v4/profile", {"containerTag": NS})
    assert status == 200 and "Alex is allergic to peanuts." in prof["profile"]["static"], prof


async def test_profile_strings_sections_and_search(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    status, out = await v4(daemon_v4, "POST", "/v4/profile", {"containerTag": NS})
    assert status == 200, out
    assert set(out) == {"profile"} and set(out["profile"]) == {"static", "dynamic"}
    static = out["profile"]["static"]
    assert static and all(isinstance(s, str) for s in static)
    assert "Alex prefers morning meetings over afternoon ones." in static
    assert not any("Lisbon" in s for s in static)
    status, out = await v4(
        daemon_v4, "POST", "/v4/profile", {"containerTag": NS, "include": ["buckets"]}
    )
    assert status == 200 and set(out["profile"]) == {"buckets"}, out
    assert out["profile"]["buckets"]["preferences"] == [
        "Alex prefers morning meetings over afternoon ones."
    ]
    status, out = await v4(
        daemon_v4, "POST", "/v4/profile",
        {"containerTag": NS, "q": "where does Alex live", "threshold": 0.2, "include": ["static"]},
    )  # fmt: skip
    assert status == 200, out
    assert set(out["profile"]) == {"static"}
    assert "Seattle" in out["searchResults"]["results"][0]["memory"]
    assert out["searchResults"]["total"] == len(out["searchResults"]["results"])


BAD = [
    ("POST", "/v4/search", {"containerTag": NS}, "$: Object missing required field `q`"),
    ("POST", "/v4/search", {"q": "  ", "containerTag": NS}, "$.q"),
    ("POST", "/v4/search", {"q": "x", "containerTag": NS, "limit": "ten"}, "$.limit"),
    ("POST", "/v4/search", {"q": "x", "containerTag": NS, "threshold": 2}, "$.threshold"),
    ("POST", "/v4/search", {"q": "x", "containerTag": NS, "searchMode": "chunks"}, "$.searchMode"),
    ("POST", "/v4/search", {"q": "x", "containerTag": NS, "include": {"chunks": "yes"}}, "$.include.chunks"),
    ("POST", "/v4/search", {"q": "x", "containerTag": "bad tag!"}, "$.containerTag"),
    ("POST", "/v4/search", {"q": "x", "containerTags": ["bad tag!"]}, "$.containerTags[0]"),
    ("POST", "/v4/profile", {}, "$: Object missing required field `containerTag`"),
    ("POST", "/v4/profile", {"containerTag": NS, "include": ["all"]}, "$.include[0]"),
    ("POST", "/v4/profile", {"containerTag": NS, "buckets": ["Not A Slug"]}, "$.buckets[0]"),
    ("POST", "/v4/memories", {"containerTag": NS, "memories": []}, "$.memories"),
    ("POST", "/v4/memories", {"containerTag": NS, "memories": [{"content": ""}]}, "$.memories[0].content"),
    ("POST", "/v4/memories", {"memories": [{"content": "x"}]}, "$: Object missing required field `containerTag`"),
    ("PATCH", "/v4/memories", {"containerTag": NS, "id": "mem_x"}, "$: Object missing required field `newContent`"),
    ("PATCH", "/v4/memories", {"containerTag": NS, "newContent": "x"}, "$: send id or content"),
    ("PATCH", "/v4/memories", {"containerTag": NS, "id": "m", "newContent": "x", "forgetAfter": "soon"}, "$.forgetAfter"),
    ("DELETE", "/v4/memories", {"containerTag": NS}, "$: send id or content"),
    ("DELETE", "/v4/memories", {"id": "mem_x"}, "$: Object missing required field `containerTag`"),
    ("POST", "/v4/memories/forget-matching", {"containerTag": NS, "dryRun": True}, "$: send query or ids"),
    ("POST", "/v4/memories/forget-matching", {"containerTag": NS, "query": "x", "maxForget": 0}, "$.maxForget"),
]  # fmt: skip


async def test_bad_input_is_400_naming_the_field(daemon_v4: Running) -> None:
    for method, path, body, where in BAD:
        status, out = await v4(daemon_v4, method, path, body)
        assert_error(status, out, 400)
        assert out["details"].startswith(where), (method, path, body, out)


async def test_a_tag_outside_a_scoped_token_is_403(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    for method, path, body in [
        ("POST", "/v4/search", {"q": "where", "containerTag": "sam"}),
        ("POST", "/v4/search", {"q": "where", "containerTags": ["sam"]}),
        ("POST", "/v4/search", {"q": "where"}),  # no tag: the default container
        ("POST", "/v4/profile", {"containerTag": "sam"}),
        ("POST", "/v4/memories", {"containerTag": "sam", "memories": [{"content": "x"}]}),
        ("PATCH", "/v4/memories", {"containerTag": "sam", "content": "Sam lives in Lisbon.", "newContent": "y"}),
        ("DELETE", "/v4/memories", {"containerTag": "sam", "content": "Sam lives in Lisbon."}),
        ("POST", "/v4/memories/forget-matching", {"containerTag": "sam", "query": "Lisbon"}),
    ]:  # fmt: skip
        status, out = await v4(daemon_v4, method, path, body, headers=SCOPED)
        assert_error(status, out, 403)
    status, out = await v4(
        daemon_v4, "POST", "/v4/search", {"q": "where does Alex live", "containerTag": NS}, SCOPED
    )
    assert status == 200 and out["results"], out
    listed = await local(daemon_v4, "POST", "/ns/sam/list/memories", {})
    assert [m["memory"] for m in listed["memories"]] == ["Sam lives in Lisbon."]  # untouched


async def test_filters_go_through_the_legacy_translation(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    filters = {"AND": [{"key": "topic", "value": "work"}]}
    status, out = await v4(
        daemon_v4, "POST", "/v4/search",
        {"q": "Alex", "containerTag": NS, "threshold": 0, "filters": filters},
    )  # fmt: skip
    if status == 400:  # the placeholder until the translation lands: it names the field
        assert out["error"] == "filters not supported yet", out
        assert out["details"].startswith("$.filters"), out
    else:
        assert status == 200, out
        assert out["results"] and all(r["metadata"]["topic"] == "work" for r in out["results"])


async def test_sdk3_search_profile_update_forget(daemon_v4: Running) -> None:
    await seed(daemon_v4)
    script = """
    found = client.search.memories(q="where does Alex live?", container_tag="alex",
                                   search_mode="hybrid", threshold=0.2, limit=5,
                                   include={"chunks": True, "summaries": True, "related_memories": True})
    top = found.results[0]
    prof = client.profile(container_tag="alex", q="Where does Alex work?", threshold=0.2)
    upd = client.memories.update_memory(container_tag="alex", content="Alex lives in Seattle near the lake.",
                                        new_content="Alex lives in Tacoma.")
    again = client.search.memories(q="where does Alex live?", container_tag="alex", threshold=0.2,
                                   include={"related_memories": True})
    gone = client.memories.forget(container_tag="alex", id=upd.id, reason="moved again")
    try:
        client.memories.forget(container_tag="alex", id="mem_missing")
        missing = None
    except supermemory.NotFoundError as err:
        missing = err.status_code
    result = {
        "top": top.memory, "chunk": top.chunks[0].content, "doc": top.chunks[0].document_id,
        "timing": found.timing, "total": found.total, "n": len(found.results),
        "static": prof.profile.static, "search": prof.search_results.results[0].memory,
        "upd": [upd.memory, upd.version, upd.parent_memory_id is not None, upd.root_memory_id is not None],
        "again": [again.results[0].id, again.results[0].memory, again.results[0].version,
                  again.results[0].context.parents[0].memory],
        "upd_id": upd.id, "gone": [gone.id, gone.forgotten], "missing": missing,
    }
    """
    got = await asyncio.to_thread(run_sdk3, daemon_v4.base, script, KEY)
    assert got["top"] == "Alex lives in Seattle near the lake.", got
    assert got["chunk"] == "Alex lives in Seattle near the lake." and got["doc"].startswith("doc_")
    assert got["total"] == got["n"] >= 1 and got["timing"] >= 0
    assert "Alex prefers morning meetings over afternoon ones." in got["static"]
    assert "Stripe" in got["search"]
    assert got["upd"] == ["Alex lives in Tacoma.", 2, True, True]
    assert got["again"] == [
        got["upd_id"],
        "Alex lives in Tacoma.",
        2,
        "Alex lives in Seattle near the lake.",
    ]
    assert got["gone"] == [got["upd_id"], True] and got["missing"] == 404
    memory = await local(daemon_v4, "GET", f"/ns/{NS}/memories/{got['upd_id']}")
    assert memory["isForgotten"] is True and memory["forgetReason"] == "moved again"
