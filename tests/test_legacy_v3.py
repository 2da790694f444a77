"""The legacy v3 routes through the real daemon: raw requests in the shapes of reference §5, the
official SDK 3.62.0 (in a child process), and documents crossing between v3 and v5."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.sdk3 import run_sdk3
from tests.settling import until_idle
from tests.test_api import assert_error, call

DOC_KEYS = {
    "id", "customId", "content", "title", "summary", "type", "status", "dreamingStatus",
    "taskType", "latestRevision", "metadata", "containerTags", "createdAt", "updatedAt", "raw",
    "source", "connectionId", "url",
}  # fmt: skip
MEMORY_KEYS = {
    "id", "memory", "isStatic", "isLatest", "isInference", "isForgotten", "version",
    "sourceCount", "parentMemoryId", "rootMemoryId", "createdAt", "updatedAt", "metadata",
}  # fmt: skip


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def v3(running: Running, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    status, body, _ = await call(running.unix, method, f"http://smemd{path}", **kwargs)
    return status, body


async def test_add_get_and_the_same_document_through_v5(running: Running) -> None:
    status, ref = await v3(
        running, "POST", "/v3/documents",
        json={
            "content": "Alex keeps bees in Leeds.", "containerTag": "user_alex", "customId": "bees",
            "metadata": {"source": "chat", "priority": 3}, "documentDate": "2025-01-15",
            "entityContext": "Alex is a beekeeper.", "filterByMetadata": {"team": "a"},
            "filepath": "/notes/bees.md", "dreaming": "instant",  # accepted, ignored / no effect
        },
    )  # fmt: skip
    assert status == 200, ref
    assert set(ref) == {"id", "status"} and ref["status"] in ("queued", "done")
    await settle(running)

    for path in (f"/v3/documents/{ref['id']}", "/v3/documents/bees", "/v3/memories/bees"):
        status, doc = await v3(running, "GET", path)
        assert status == 200, doc
        assert set(doc) >= DOC_KEYS, set(doc) ^ DOC_KEYS
        assert (doc["id"], doc["customId"], doc["status"]) == (ref["id"], "bees", "done")
        assert doc["content"] == "Alex keeps bees in Leeds."
        assert doc["containerTags"] == ["user_alex"]
        assert doc["metadata"] == {"source": "chat", "priority": 3, "team": "a"}
        assert doc["memories"], doc
        assert all(set(m) == MEMORY_KEYS for m in doc["memories"])
        assert any("bees" in m["memory"] for m in doc["memories"])

    status, v5 = await v3(running, "GET", "/ns/user_alex/document/bees?include=memories")
    assert status == 200, v5
    assert (v5["id"], v5["content"]) == (ref["id"], "Alex keeps bees in Leeds.")
    assert v5["metadata"]["containerTags"] == ["user_alex"]
    assert {m["id"] for m in v5["memories"]} == {m["id"] for m in doc["memories"]}
    status, ns = await v3(running, "GET", "/ns/user_alex")
    assert ns["supportingContext"] == "Alex is a beekeeper."
    status, tag = await v3(running, "GET", "/v3/container-tags/user_alex")
    assert status == 200, tag
    assert tag["containerTag"] == "user_alex" and tag["entityContext"] == "Alex is a beekeeper."


async def test_a_v5_document_reads_through_v3(running: Running) -> None:
    status, ref = await v3(
        running, "POST", "/ns/proj_x/document",
        json={"content": "The launch is on Friday.", "id": "launch", "metadata": {"k": "v"}},
    )  # fmt: skip
    assert status == 200, ref
    await settle(running)
    status, doc = await v3(running, "GET", "/v3/documents/launch")
    assert status == 200, doc
    assert (doc["id"], doc["customId"], doc["containerTags"]) == (ref["id"], "launch", ["proj_x"])
    assert doc["metadata"] == {"k": "v"}
    status, listed = await v3(
        running, "POST", "/v3/documents/list", json={"containerTags": ["proj_x"]}
    )
    assert status == 200, listed
    assert [d["customId"] for d in listed["memories"]] == ["launch"]
    assert listed["pagination"] == {"currentPage": 1, "limit": 10, "totalItems": 1, "totalPages": 1}


async def test_unknown_ids_and_bad_bodies(running: Running) -> None:
    for method in ("GET", "DELETE"):
        status, body = await v3(running, method, "/v3/documents/nope")
        assert_error(status, body, 404)
    status, body = await v3(running, "PATCH", "/v3/documents/nope", json={"content": "x"})
    assert_error(status, body, 404)
    bad: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/v3/documents", {"content": ""}, "$.content"),
        ("POST", "/v3/documents", {"content": "x", "containerTag": "a b"}, "$.containerTag"),
        ("POST", "/v3/documents", {"content": "x", "metadata": {"a": {"b": 1}}}, "$.metadata[...]"),
        ("POST", "/v3/documents", {"content": "x", "documentDate": "soon"}, "$.documentDate"),
        ("POST", "/v3/documents/batch", {"documents": []}, "$.documents"),
        ("POST", "/v3/documents/list", {"filters": {"AND": [{"key": "a"}]}}, "$.filters.AND[0].value"),
        ("POST", "/v3/documents/list", {"limit": "many"}, "$.limit"),
        ("POST", "/v3/search", {"q": "x", "filters": {"key": "a", "value": "b"}}, "$.filters"),
        ("DELETE", "/v3/documents/bulk", {}, "$"),
    ]  # fmt: skip
    for method, path, body, where in bad:
        status, reply = await v3(running, method, path, json=body)
        assert_error(status, reply, 400)
        assert reply["details"].startswith(where), (path, body, reply)


async def test_batch_strings_objects_and_their_own_tags(running: Running) -> None:
    status, out = await v3(
        running, "POST", "/v3/documents/batch",
        json={
            "containerTag": "team_a", "metadata": {"shared": True}, "entityContext": "Team A.",
            "documents": [
                "Kim plays the cello.",
                {"content": "Lee grows tomatoes.", "customId": "lee", "metadata": {"own": 1}},
                {"content": "Max sails.", "containerTags": ["team_b", "extra"], "customId": "max"},
                {"content": "Bad date.", "customId": "bad", "documentDate": "whenever"},
            ],
        },
    )  # fmt: skip
    assert status == 200, out
    assert (out["success"], out["failed"]) == (3, 1)
    assert [r["status"] for r in out["results"]][:3] != ["error"] * 3
    assert out["results"][3]["id"] == "bad" and out["results"][3]["status"] == "error"
    assert "$.documents[3].documentDate" in out["results"][3]["details"]
    await settle(running)
    status, lee = await v3(running, "GET", "/ns/team_a/document/lee")
    assert lee["metadata"] == {"own": 1, "containerTags": ["team_a"]}
    status, ns = await v3(running, "GET", "/ns/team_a")
    assert ns["supportingContext"] == "Team A."
    status, max_ = await v3(running, "GET", "/v3/documents/max")
    assert max_["containerTags"] == ["team_b", "extra"]
    status, listed = await v3(running, "POST", "/ns/team_b/list/documents", json={})
    assert [d["id"] for d in listed["documents"]] == [max_["id"]]
    status, kim = await v3(
        running, "POST", "/v3/documents/list", json={"containerTags": ["team_a"]}
    )
    assert {d["metadata"].get("shared") for d in kim["memories"]} == {True, None}


async def test_update_delete_and_bulk_delete(running: Running) -> None:
    for i in range(4):
        status, _ = await v3(
            running, "POST", "/v3/documents",
            json={"content": f"Fact number {i}.", "customId": f"f{i}", "containerTags": ["t1"]},
        )  # fmt: skip
        assert status == 200
    await v3(running, "POST", "/v3/documents", json={"content": "Other.", "containerTag": "t2"})
    await settle(running)
    status, ref = await v3(
        running, "PATCH", "/v3/documents/f0",
        json={"content": "Fact number zero.", "metadata": {"m": "x"}, "documentDate": "2024-02-01"},
    )  # fmt: skip
    assert status == 200 and set(ref) == {"id", "status"}, ref
    await settle(running)
    status, doc = await v3(running, "GET", "/ns/t1/document/f0")
    assert doc["content"] == "Fact number zero."
    assert doc["metadata"] == {"m": "x", "containerTags": ["t1"]}  # its tags kept

    status, ref = await v3(
        running, "PATCH", "/v3/documents/f3", json={"containerTags": ["t1", "t9"]}
    )
    assert status == 200, ref
    status, doc = await v3(running, "GET", "/v3/documents/f3")
    assert doc["containerTags"] == ["t1", "t9"]  # recorded; the document stays in t1
    status, doc = await v3(running, "GET", "/ns/t1/document/f3")
    assert (status, doc["content"]) == (200, "Fact number 3.")
    status, body = await v3(running, "PATCH", "/v3/documents/f3", json={"containerTag": "a b"})
    assert_error(status, body, 400)

    async with running.unix.delete("http://smemd/v3/documents/f1") as response:
        assert response.status == 204
        assert await response.read() == b""
    status, body = await v3(running, "GET", "/v3/documents/f1")
    assert_error(status, body, 404)

    status, out = await v3(running, "DELETE", "/v3/documents/bulk", json={"ids": ["f2", "zzz"]})
    assert status == 200, out
    assert out == {
        "deletedCount": 1,
        "success": True,
        "errors": [{"id": "zzz", "error": "not found"}],
    }
    status, out = await v3(running, "DELETE", "/v3/documents/bulk", json={"containerTags": ["t2"]})
    assert out == {"deletedCount": 1, "success": True, "containerTags": ["t2"]}
    status, left = await v3(running, "POST", "/ns/t1/list/documents", json={})
    assert sorted(d["customId"] for d in left["documents"]) == ["f0", "f3"]
    status, left = await v3(running, "POST", "/ns/t2/list/documents", json={})
    assert left["documents"] == []


async def test_list_filters_and_processing(running: Running) -> None:
    rows = [
        {"plan": "Pro", "seats": 5, "tags": ["a", "b"]},
        {"plan": "free", "seats": 50, "tags": ["b"]},
        {"plan": "pro", "seats": "7"},
        {"note": "no plan"},
    ]
    for i, metadata in enumerate(rows):
        await v3(
            running, "POST", "/v3/documents",
            json={"content": f"Row {i}.", "customId": f"r{i}", "containerTag": "lf", "metadata": metadata},
        )  # fmt: skip
    cases: list[tuple[Any, set[str]]] = [
        ({"AND": [{"key": "plan", "value": "pro", "ignoreCase": True}]}, {"r0", "r2"}),
        ({"AND": [{"key": "plan", "value": "pro", "negate": True}]}, {"r0", "r1", "r3"}),
        (
            {"OR": [{"key": "seats", "value": "10", "filterType": "numeric", "numericOperator": "<"}]},
            {"r0"},
        ),
        (
            {"AND": [{"key": "seats", "value": "10", "filterType": "numeric", "numericOperator": "<", "negate": "true"}]},
            {"r1"},  # >= 10, numbers only: the string "7" and the missing key are not
        ),
        ({"AND": [{"key": "seats", "value": "7"}]}, {"r2"}),
        ({"AND": [{"key": "seats", "value": "5"}]}, {"r0"}),  # "5" reads as the number too
        ({"AND": [{"key": "tags", "value": "a", "filterType": "array_contains", "negate": True}]}, {"r1", "r2", "r3"}),
        ('{"OR": [{"key": "note", "value": "PLAN", "filterType": "string_contains", "ignoreCase": true}]}', {"r3"}),
        (
            {"OR": [{"AND": [{"key": "plan", "value": "free"}]}, {"key": "seats", "value": "5", "filterType": "numeric"}]},
            {"r0", "r1"},
        ),
    ]  # fmt: skip
    for filters, expected in cases:
        status, out = await v3(
            running, "POST", "/v3/documents/list",
            json={"containerTags": ["lf"], "filters": filters, "limit": "100", "includeContent": True},
        )  # fmt: skip
        assert status == 200, (filters, out)
        assert {d["customId"] for d in out["memories"]} == expected, filters
        assert all(d["content"].startswith("Row") for d in out["memories"])

    status, out = await v3(running, "GET", "/v3/documents/processing?containerTags=lf&view=pending")
    assert status == 200, out
    assert set(out) == {"documents", "totalCount", "pagination"}
    await settle(running)
    for view in ("active", "pending", "all"):
        status, out = await v3(
            running, "GET", f"/v3/documents/processing?containerTags=lf&view={view}"
        )
        assert (status, out["documents"], out["totalCount"]) == (200, [], 0)


async def test_search_groups_chunks_by_document(running: Running) -> None:
    long = " ".join(f"Paragraph {i} is about gardening and soil." for i in range(200))
    docs = {
        "kites": "Sam flies red kites on the beach every Sunday.",
        "cake": "Jo bakes a lemon cake for birthdays.",
        "long": long + " The secret ingredient of the compost is coffee grounds. " + long,
    }
    for custom_id, content in docs.items():
        status, _ = await v3(
            running, "POST", "/v3/documents",
            json={"content": content, "customId": custom_id, "containerTags": ["s1"], "metadata": {"k": custom_id}},
        )  # fmt: skip
        assert status == 200
    await settle(running)
    status, out = await v3(
        running,
        "POST",
        "/v3/search",
        json={"q": "who flies kites?", "containerTags": ["s1"], "limit": 1},
    )
    assert status == 200, out
    assert set(out) == {"results", "timing", "total"} and out["total"] == 1
    (first,) = out["results"]
    assert {
        "documentId",
        "title",
        "type",
        "score",
        "chunks",
        "metadata",
        "createdAt",
        "updatedAt",
    } <= set(first)
    assert first["metadata"] == {"k": "kites"}
    assert first["chunks"][0] == {
        "content": docs["kites"],
        "isRelevant": True,
        "position": 0,
        "score": first["score"],
    }

    query = {
        "q": "secret ingredient of the compost",
        "containerTag": "s1",
        "docId": "long",
        "chunkThreshold": 0.2,
    }
    status, out = await v3(running, "POST", "/v3/search", json=query)
    (found,) = out["results"]
    relevant = {c["position"] for c in found["chunks"] if c["isRelevant"]}
    context = {c["position"] for c in found["chunks"] if not c["isRelevant"]}
    assert relevant and context  # the matching chunk and its neighbours, told apart
    assert all({p - 1, p + 1} & relevant for p in context)
    assert all(c["score"] >= 0.2 for c in found["chunks"] if c["isRelevant"])
    assert [c["position"] for c in found["chunks"]] == sorted(relevant | context)
    status, only = await v3(
        running,
        "POST",
        "/v3/search",
        json={**query, "onlyMatchingChunks": True, "includeFullDocs": True},
    )
    assert all(c["isRelevant"] for c in only["results"][0]["chunks"])
    assert only["results"][0]["content"] == docs["long"]

    filtered = {
        "q": "kites",
        "containerTag": "s1",
        "filters": {"AND": [{"key": "k", "value": "cake"}]},
    }
    status, out = await v3(running, "POST", "/v3/search", json=filtered)
    assert [r["metadata"] for r in out["results"]] == [{"k": "cake"}]


async def test_a_token_sees_only_its_namespaces(start_daemon: StartDaemon, short_dir: Path) -> None:
    config = config_with_tokens(
        short_dir, token_table("mine", "tok-mine-0001", namespaces=["mine_*"])
    )
    running = await start_daemon(config)
    status, theirs = await v3(
        running,
        "POST",
        "/v3/documents",
        json={"content": "Secret.", "customId": "s", "containerTag": "theirs"},
    )
    assert status == 200
    headers = {"Authorization": "Bearer tok-mine-0001"}

    async def tcp(method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        status, body, _ = await call(
            running.tcp, method, running.url(path), headers=headers, **kwargs
        )
        return status, body

    for method, path in (
        ("GET", "/v3/documents/s"),
        ("GET", f"/v3/memories/{theirs['id']}"),
        ("DELETE", "/v3/documents/s"),
    ):
        status, body = await tcp(method, path)
        assert_error(status, body, 404)
    status, body = await tcp("PATCH", "/v3/documents/s", json={"content": "Mine now."})
    assert_error(status, body, 404)
    status, body = await tcp(
        "POST", "/v3/documents", json={"content": "x", "containerTag": "theirs"}
    )
    assert_error(status, body, 403)
    status, body = await tcp("POST", "/v3/documents", json={"content": "x"})  # the default tag
    assert_error(status, body, 403)
    status, body = await tcp("DELETE", "/v3/documents/bulk", json={"ids": ["s"]})
    assert (status, body["deletedCount"]) == (200, 0)
    status, body = await tcp("DELETE", "/v3/documents/bulk", json={"containerTags": ["theirs"]})
    assert_error(status, body, 403)
    status, body = await tcp("GET", "/v3/container-tags/theirs")
    assert_error(status, body, 403)
    status, ref = await tcp(
        "POST",
        "/v3/documents",
        json={"content": "Mine.", "customId": "s", "containerTag": "mine_1"},
    )
    assert status == 200, ref
    status, doc = await tcp("GET", "/v3/documents/s")  # the one customId it may see
    assert (status, doc["id"]) == (200, ref["id"])


async def test_file_upload(running: Running) -> None:
    form = aiohttp.FormData()
    form.add_field(
        "file", b"Pat owns a green bicycle.", filename="pat.txt", content_type="text/plain"
    )
    form.add_field("containerTags", '["files", "more"]')
    form.add_field("customId", "pat")
    form.add_field("metadata", '{"kind": "note"}')
    form.add_field("useAdvancedProcessing", "true")
    status, ref = await v3(running, "POST", "/v3/documents/file", data=form)
    assert status == 200, ref
    await settle(running)
    status, doc = await v3(running, "GET", "/v3/documents/pat")
    assert doc["content"] == "Pat owns a green bicycle."
    assert doc["containerTags"] == ["files", "more"]
    assert doc["metadata"] == {"kind": "note", "filename": "pat.txt"}
    status, v5 = await v3(running, "GET", "/ns/files/document/pat")
    assert v5["id"] == ref["id"]


async def test_container_tag_settings_and_delete(running: Running) -> None:
    for method in ("GET", "DELETE"):
        status, body = await v3(running, method, "/v3/container-tags/nowhere")
        assert_error(status, body, 404)
    status, body = await v3(
        running, "PATCH", "/v3/container-tags/nowhere", json={"entityContext": "x"}
    )
    assert_error(status, body, 404)  # as PATCH /ns/{ns}: a write that names the tag makes it
    await v3(running, "POST", "/v3/documents", json={"content": "Cy knits.", "containerTag": "ct"})
    await v3(running, "POST", "/v3/documents", json={"content": "Di rows.", "containerTag": "ct2"})
    status, out = await v3(
        running, "PATCH", "/v3/container-tags/ct", json={"entityContext": "A test tag."}
    )
    assert status == 200, out
    assert (out["containerTag"], out["entityContext"]) == ("ct", "A test tag.")
    status, ns = await v3(running, "GET", "/ns/ct")
    assert ns["supportingContext"] == "A test tag."
    await settle(running)
    status, out = await v3(running, "DELETE", "/v3/container-tags/ct")
    assert status == 200, out
    assert out == {
        "success": True,
        "containerTag": "ct",
        "deletedDocumentsCount": 1,
        "deletedMemoriesCount": 1,
    }
    status, body = await v3(running, "GET", "/ns/ct")
    assert_error(status, body, 404)
    status, ns = await v3(running, "GET", "/ns/ct2")
    assert (status, ns["documentCount"]) == (200, 1)


@pytest.mark.timeout(180)
async def test_sdk3_against_the_daemon(running: Running) -> None:
    script = """
    import supermemory, time
    def wait(i):
        for _ in range(600):
            if client.documents.get(i).status == "done":
                return
            time.sleep(0.05)
        raise AssertionError(i)
    added = client.add(content="Robin collects vinyl records.", container_tag="sdk3", custom_id="robin", metadata={"src": "sdk", "n": 2})
    batch = client.documents.batch_add(documents=["Ash runs marathons.", {"content": "Bo paints.", "custom_id": "bo"}], container_tag="sdk3")
    wait("robin"); wait("bo"); wait(batch.results[0].id)
    doc = client.documents.get("robin")
    listed = client.documents.list(container_tags=["sdk3"], filters={"AND": [{"key": "n", "value": "1", "filterType": "numeric", "numericOperator": ">"}]})
    found = client.search.documents(q="who collects records?", container_tags=["sdk3"], limit=3)
    updated = client.documents.update("robin", content="Robin collects cassette tapes.")
    wait("robin")
    after = client.documents.get("robin")
    deleted = client.documents.delete("bo")
    try:
        client.documents.get("bo")
        gone = False
    except supermemory.NotFoundError:
        gone = True
    bulk = client.documents.delete_bulk(ids=[batch.results[0].id, "nope"])
    uploaded = client.documents.upload_file(
        file=("notes.txt", b"Cas plays chess on Tuesdays.", "text/plain"), container_tags='["sdk3"]',
        custom_id="notes", metadata='{"kind": "file"}',
    )
    wait("notes")
    processing = client.documents.list_processing(container_tags="sdk3", view="all")
    result = {
        "added": added.id, "success": batch.success, "failed": batch.failed,
        "doc": [doc.custom_id, doc.content, doc.container_tags, doc.metadata, len(doc.memories or [])],
        "listed": [m.custom_id for m in listed.memories], "total": listed.pagination.total_items,
        "found": [(r.document_id, [c.is_relevant for c in r.chunks]) for r in found.results],
        "updated": updated.id, "after": after.content, "deleted": deleted, "gone": gone,
        "bulk": [bulk.deleted_count, bulk.success, [(e.id, e.error) for e in bulk.errors or []]],
        "uploaded": [uploaded.id, client.documents.get("notes").metadata],
        "processing": [processing.total_count, processing.documents],
    }
    """
    out = await asyncio.to_thread(run_sdk3, running.base, script)
    assert (out["success"], out["failed"]) == (2, 0)
    assert out["doc"][:4] == [
        "robin",
        "Robin collects vinyl records.",
        ["sdk3"],
        {"src": "sdk", "n": 2},
    ]
    assert out["doc"][4] >= 1
    assert (out["listed"], out["total"]) == (["robin"], 1)
    assert out["found"][0][0] == out["added"]
    assert (out["updated"], out["after"]) == (out["added"], "Robin collects cassette tapes.")
    assert (out["deleted"], out["gone"]) == (None, True)
    assert out["bulk"] == [1, True, [["nope", "not found"]]]
    assert out["uploaded"][1] == {"kind": "file", "filename": "notes.txt"}
    assert out["processing"] == [0, []]
    status, v5 = await v3(running, "GET", "/ns/sdk3/document/robin")
    assert status == 200, v5
    assert v5["content"] == "Robin collects cassette tapes."
