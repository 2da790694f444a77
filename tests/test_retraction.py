"""Retraction through the real daemon: what a source alone taught goes, and unretract puts it back."""

from __future__ import annotations

from typing import Any

from smemd.engine.core import Engine
from smemd.engine.ids import now
from smemd.store.records import NewMemory
from tests.conftest import Running
from tests.raw_sqlite import raw_connection, read_rows
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, search, settle

Snapshot = dict[str, list[tuple[Any, ...]]]


def engine_of(running: Running) -> Engine:
    engine = running.daemon.state.engine
    assert engine is not None
    return engine


async def snapshot(engine: Engine, namespace: str = "people") -> Snapshot:
    """Every row retraction may touch: the namespace's memories (all columns), sources, links."""
    ids = "SELECT id FROM memories WHERE namespace = ?"
    queries = {
        "memories": "SELECT * FROM memories WHERE namespace = ? ORDER BY seq",
        "sources": f"SELECT * FROM memory_sources WHERE memory_id IN ({ids}) ORDER BY 1, 2, 3",
        "relations": f"SELECT * FROM relations WHERE from_id IN ({ids}) ORDER BY 1, 2, 3",
    }
    async with raw_connection(engine.store) as db:
        return {
            name: [tuple(row) for row in await db.execute_fetchall(sql, [namespace])]
            for name, sql in queries.items()
        }


async def memories_by_text(running: Running) -> dict[str, dict[str, Any]]:
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    assert status == 200, listed
    return {m["memory"]: m for m in listed["memories"]}


async def post(running: Running, path: str, expect: int = 200) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "POST", f"{NS}/{path}")
    assert status == expect, body
    assert isinstance(body, dict)
    return body


async def test_one_of_two_sources_keeps_the_memory_both_withdraw_it_and_what_derives_from_it(
    running: Running,
) -> None:
    first = await add(running, "Mia plays the cello.", id="cello-a")
    second = await add(running, "Mia lives in Oslo.", id="oslo-b")
    await settle(running)
    texts = await memories_by_text(running)
    cello, oslo = texts["Mia plays the cello."]["id"], texts["Mia lives in Oslo."]["id"]
    engine = engine_of(running)
    t = now()
    inferred = "mem_inferred_cellist"
    async with engine.store.write() as writer:  # as a duplicate and dreaming would
        await writer.add_source(cello, second["id"], None, t)
        vector = (await engine.embedder.embed(["Mia plays cello in Oslo."], kind="document"))[0]
        await writer.insert_memory(
            NewMemory(
                id=inferred, namespace="people", text="Mia plays cello in Oslo.", type="fact",
                root_id=inferred, is_inference=True,
            ),
            vector, t,
        )  # fmt: skip
        await writer.add_relation(inferred, cello, "derives", 0.9, t)
        await writer.add_relation(inferred, oslo, "derives", 0.9, t)
    engine.indexes.forget("people")  # recall reloads, and sees the inference
    before = await snapshot(engine)

    one = await post(running, "document/cello-a/retract")
    assert one["withdrawn"] == [] and one["unlinked"] == [cello] and one["reinstated"] == []
    status, kept, _ = await call(running.unix, "GET", f"{NS}/memories/{cello}")
    assert status == 200 and kept["isForgotten"] is False and kept["documentId"] == second["id"]
    async with engine.store.read() as reader:
        assert await reader.sources_of(cello) == [second["id"]]
    assert_error(*(await call(running.unix, "POST", f"{NS}/document/cello-a/retract"))[:2], 409)
    # A retracted document cannot be changed (its new content would be read as live).
    status, body, _ = await call(
        running.unix, "PATCH", f"{NS}/document/cello-a", json={"content": "Mia plays the oboe."}
    )
    assert_error(status, body, 409)

    both = await post(running, "document/oslo-b/retract")
    # Oslo's only source and the cello's last one: both go, and the inference made of them.
    assert both["withdrawn"] == sorted([cello, oslo, inferred])
    assert both["subjectKind"] == "document" and both["undone"] is False
    left = await memories_by_text(running)
    assert "Mia plays the cello." not in left and "Mia plays cello in Oslo." not in left
    results = await search(running, "Mia cello Oslo", searchMode="memories", threshold=0)
    assert not {r["id"] for r in results} & {cello, oslo, inferred}
    status, gone, _ = await call(running.unix, "GET", f"{NS}/memories/{inferred}")
    assert status == 200
    assert gone["forgetReason"] == "retracted" and gone["isForgotten"] is True
    # A withdrawn memory comes back by unretract, not by restore.
    assert_error(*(await call(running.unix, "POST", f"{NS}/memories/{cello}/restore"))[:2], 409)

    # Undoing the first while the second holds the cello is refused, restoring nothing.
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/cello-a/unretract")
    assert_error(status, body, 409)
    assert both["retractionId"] in body["details"]
    assert (await post(running, "document/oslo-b/unretract"))["withdrawn"] == both["withdrawn"]
    undone = await post(running, "document/cello-a/unretract")
    assert undone["undone"] is True and undone["unlinked"] == [cello]
    assert await snapshot(engine) == before
    assert first["id"] != second["id"]
    results = await search(running, "Mia cello Oslo", searchMode="memories", threshold=0)
    assert {cello, oslo, inferred} <= {r["id"] for r in results}


async def test_retracting_an_update_reinstates_the_version_it_superseded(
    running: Running,
) -> None:
    await add(running, "Alex lives in Seattle.", id="alex-1")
    await settle(running)
    await add(running, "Alex moved to Portland.", id="alex-2")
    await settle(running)
    texts = await memories_by_text(running)
    portland = texts["Alex moved to Portland."]["id"]
    engine = engine_of(running)
    before = await snapshot(engine)

    retracted = await post(running, "document/alex-2/retract")
    assert retracted["withdrawn"] == [portland]
    [seattle] = retracted["reinstated"]
    found = await search(running, "Where does Alex live?", searchMode="memories", threshold=0)
    assert [r["memory"] for r in found] == ["Alex lives in Seattle."]
    assert found[0]["id"] == seattle and found[0]["isLatest"] is True
    status, history, _ = await call(running.unix, "GET", f"{NS}/memories/{seattle}/history")
    assert status == 200, history
    # The withdrawn version stays in the history, forgotten as retracted and no longer latest.
    assert [
        (m["memory"], m["isLatest"], m["isForgotten"], m.get("forgetReason"))
        for m in history["memories"]
    ] == [
        ("Alex lives in Seattle.", True, False, None),
        ("Alex moved to Portland.", False, True, "retracted"),
    ]

    await post(running, "document/alex-2/unretract")
    assert await snapshot(engine) == before
    found = await search(running, "Where does Alex live?", searchMode="memories", threshold=0)
    assert found[0]["memory"] == "Alex moved to Portland."
    assert all("Seattle" not in r["memory"] for r in found)


async def test_a_memory_retracts_with_its_cascade_and_unknown_or_unretracted_things_answer(
    running: Running,
) -> None:
    await add(running, "Lena keeps bees.", id="bees")
    await settle(running)
    bees = (await memories_by_text(running))["Lena keeps bees."]["id"]
    engine = engine_of(running)
    t = now()
    async with engine.store.write() as writer:
        vector = (await engine.embedder.embed(["Lena sells honey."], kind="document"))[0]
        await writer.insert_memory(
            NewMemory(id="mem_honey", namespace="people", text="Lena sells honey.", type="fact",
                      root_id="mem_honey", is_inference=True),
            vector, t,
        )  # fmt: skip
        await writer.add_relation("mem_honey", bees, "derives", 0.8, t)
    before = await snapshot(engine)
    retracted = await post(running, f"memories/{bees}/retract")
    assert retracted["withdrawn"] == sorted([bees, "mem_honey"])
    assert retracted["subjectKind"] == "memory" and retracted["subjectId"] == bees
    assert_error(*(await call(running.unix, "POST", f"{NS}/memories/mem_honey/retract"))[:2], 409)
    await post(running, f"memories/{bees}/unretract")
    assert await snapshot(engine) == before
    await post(running, f"memories/{bees}/unretract", expect=409)
    await post(running, "document/nope/retract", expect=404)
    await post(running, "memories/nope/unretract", expect=404)
    await post(running, "document/bees/unretract", expect=409)


async def test_hard_delete_takes_what_was_inferred_from_the_document_alone(
    running: Running,
) -> None:
    await add(running, "Noor runs marathons.", id="runs")
    await add(running, "Noor lives in Cairo.", id="cairo")
    await settle(running)
    texts = await memories_by_text(running)
    runs, cairo = texts["Noor runs marathons."]["id"], texts["Noor lives in Cairo."]["id"]
    engine = engine_of(running)
    t = now()
    async with engine.store.write() as writer:
        vector = (await engine.embedder.embed(["Noor is fit."], kind="document"))[0]
        for memory_id, parents in (("mem_fit", [runs]), ("mem_cairo_runner", [runs, cairo])):
            await writer.insert_memory(
                NewMemory(id=memory_id, namespace="people", text=memory_id, type="fact",
                          root_id=memory_id, is_inference=True),
                vector, t,
            )  # fmt: skip
            for parent in parents:
                await writer.add_relation(memory_id, parent, "derives", 0.8, t)
    retracted = await post(running, "document/runs/retract")
    assert retracted["withdrawn"] == sorted([runs, "mem_fit"])

    status, body, _ = await call(running.unix, "DELETE", f"{NS}/document", json={"ids": ["runs"]})
    assert status == 200, body
    for gone in (runs, "mem_fit"):
        status, body, _ = await call(running.unix, "GET", f"{NS}/memories/{gone}")
        assert_error(status, body, 404)
    status, kept, _ = await call(running.unix, "GET", f"{NS}/memories/mem_cairo_runner")
    assert status == 200 and kept["isForgotten"] is False
    async with engine.store.read() as reader:
        assert await reader.active_retraction(retracted["subjectId"]) is None


async def test_a_namespace_moved_or_removed_takes_its_retractions(running: Running) -> None:
    await add(running, "Ivo paints.", id="paints")
    await settle(running)
    await post(running, "document/paints/retract")
    engine = engine_of(running)

    async def retractions() -> list[tuple[Any, ...]]:
        return await read_rows(engine.store, "SELECT namespace FROM retractions")

    status, body, _ = await call(running.unix, "DELETE", f"{NS}", params={"moveTo": "artists"})
    assert status == 200, body
    assert await retractions() == [("artists",)]
    status, body, _ = await call(
        running.unix, "POST", "http://smemd/ns/artists/document/paints/unretract"
    )
    assert status == 200 and body["withdrawn"], body
    status, body, _ = await call(running.unix, "DELETE", "http://smemd/ns/artists")
    assert status == 200, body
    assert await retractions() == []


async def test_a_retracted_documents_chunks_leave_every_search_until_it_is_undone(
    running: Running,
) -> None:
    await add(running, "Kai keeps three beehives on the roof of the old mill.", id="hives")
    await add(running, "Noor restores antique clocks in her workshop.", id="clocks")
    await settle(running)
    engine = engine_of(running)
    query = "beehives on the roof"

    async def chunks_found() -> dict[str, bool]:
        """Whether each search that serves chunks finds the hives document's chunk."""
        found: dict[str, bool] = {}
        unset = {"operator": "and", "operands": [{"field": "x", "operator": "neq", "value": 1}]}
        searches: dict[str, dict[str, Any]] = {
            "v5 chunks": {"searchMode": "chunks"},  # the fast path: the indexes' live mask
            "v5 hybrid": {"searchMode": "hybrid"},
            "v5 filtered": {"searchMode": "chunks", "filter": unset},  # the SQL path
            "v5 asOf": {"searchMode": "chunks", "asOf": "2100-01-01T00:00:00Z"},
        }  # fmt: skip
        for name, options in searches.items():
            results = await search(running, query, threshold=0, **options)
            found[name] = any("beehives" in (r.get("chunk") or "") for r in results)
        for path, body in (
            ("/v3/search", {"q": query, "containerTag": "people", "chunkThreshold": 0}),
            ("/v4/search", {"q": query, "containerTag": "people", "searchMode": "documents",
                            "threshold": 0}),
        ):  # fmt: skip
            status, out, _ = await call(running.unix, "POST", f"http://smemd{path}", json=body)
            assert status == 200, out
            texts = [r.get("chunk") or "" for r in out["results"]]
            texts += [c["content"] for r in out["results"] for c in r.get("chunks", [])]
            found[path] = any("beehives" in t for t in texts)
        return found

    everywhere = dict.fromkeys(
        ["v5 chunks", "v5 hybrid", "v5 filtered", "v5 asOf", "/v3/search", "/v4/search"], True
    )
    nowhere = dict.fromkeys(everywhere, False)
    assert await chunks_found() == everywhere
    await post(running, "document/hives/retract")
    assert await chunks_found() == nowhere
    engine.indexes.forget("people")  # reloaded from the rows, as after a restart
    assert await chunks_found() == nowhere
    await post(running, "document/hives/unretract")
    assert await chunks_found() == everywhere
    engine.indexes.forget("people")
    assert await chunks_found() == everywhere
