"""The graph route through the real daemon: a bounded neighbourhood, typed edges, its centre,
entities and the memories that name them."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import smemd.engine.graph
from smemd.engine.ids import now
from smemd.store.records import Mention, NewMemory
from tests.browser import seed
from tests.conftest import Running
from tests.pace import scaled
from tests.test_api import assert_error, call
from tests.test_memory_api import add, settle

NS = "http://smemd/ns/people"


async def graph(running: Running, **query: Any) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/graph", params=query)
    assert status == 200, body
    ids = {n["id"] for n in body["nodes"]}
    assert len(ids) == len(body["nodes"])
    assert all(e["source"] in ids and e["target"] in ids for e in body["edges"])
    return body


def edges(body: dict[str, Any], kind: str) -> set[tuple[str, str]]:
    return {(e["source"], e["target"]) for e in body["edges"] if e["kind"] == kind}


async def test_the_newest_documents_come_with_their_memories_bounded_by_the_limit(
    running: Running,
) -> None:
    await seed(running, documents=30)
    body = await graph(running, limit="40")
    assert len(body["nodes"]) == 40 and body["truncated"] is True
    counts = body["counts"]
    assert sum(counts["byKind"].values()) == 40
    assert counts["byKind"]["document"] >= 2 and counts["byKind"]["memory"] >= 20
    assert sum(counts["byType"].values()) == counts["byKind"]["memory"]
    assert counts["byEdge"]["source"] == len(edges(body, "source")) >= 20
    assert set(counts["byEdge"]) == {
        "source", "updates", "extends", "derives", "contradicts", "mentions",
    }  # fmt: skip
    assert counts["byKind"]["entity"] == 0  # two steps from a document: depth 1 stops short
    first = body["nodes"][0]
    assert first["kind"] == "document" and first["seed"] is True
    assert first["label"].startswith("Jonas lives in")  # doc-029, the newest, by its title
    mine = [n for n in body["nodes"] if n.get("documentId") == first["id"]]
    assert mine and all((first["id"], m["id"]) in edges(body, "source") for m in mine)
    assert all(
        n["type"] in ("fact", "preference", "episode") and n["status"] == "live"
        for n in body["nodes"]
        if n["kind"] == "memory"
    )
    everything = await graph(running, limit="500")
    assert everything["truncated"] is False
    assert everything["counts"]["byKind"]["document"] == 30


async def test_an_update_makes_a_version_chain_and_around_shows_its_document_and_versions(
    running: Running,
) -> None:
    doc = await add(running, "Alex lives in Seattle.", id="alex")
    await settle(running)
    _, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    old = listed["memories"][0]
    status, new, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{old['id']}", json={"memory": "Alex lives in Oslo."}
    )
    assert status == 200, new

    body = await graph(running, around=old["id"])
    nodes = {n["id"]: n for n in body["nodes"] if n["kind"] != "entity"}
    assert set(nodes) == {doc["id"], old["id"], new["id"]}
    named = {n["label"]: n["id"] for n in body["nodes"] if n["kind"] == "entity"}
    assert set(named) == {"Alex", "Seattle"}  # what the centre names; Oslo is its successor's
    assert edges(body, "mentions") == {
        (old["id"], named["Alex"]), (old["id"], named["Seattle"]), (new["id"], named["Alex"]),
    }  # fmt: skip
    assert nodes[old["id"]]["status"] == "superseded" and nodes[old["id"]]["seed"] is True
    assert nodes[old["id"]]["isLatest"] is False
    assert nodes[new["id"]]["status"] == "live" and nodes[new["id"]]["seed"] is False
    assert (
        nodes[doc["id"]]["kind"] == "document"
        and nodes[doc["id"]]["label"] == "Alex lives in Seattle."
    )
    assert edges(body, "updates") == {(new["id"], old["id"])}  # the newer updates the older
    assert (doc["id"], old["id"]) in edges(body, "source")
    assert body["counts"]["byStatus"] == {"live": 4, "superseded": 1, "forgotten": 0}

    # Around the document (by smem's id or the caller's), one step reaches its memories.
    for ref in (doc["id"], "alex"):
        around_doc = await graph(running, around=ref)
        assert around_doc["nodes"][0]["id"] == doc["id"]
        assert {n["id"] for n in around_doc["nodes"]} >= {doc["id"], old["id"]}

    # A forgotten memory stays in the graph, as forgotten.
    await call(running.unix, "DELETE", f"{NS}/memories", json={"ids": [new["id"]]})
    body = await graph(running, around=new["id"])
    assert {n["id"]: n["status"] for n in body["nodes"]}[new["id"]] == "forgotten"


async def test_relations_between_memories_are_typed_edges_and_depth_reaches_further(
    running: Running,
) -> None:
    await add(running, "Sam drinks tea.", id="tea")
    await add(running, "Sam takes honey in tea.", id="honey")
    await settle(running)
    _, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    by_text = {m["memory"]: m["id"] for m in listed["memories"]}
    tea, honey = by_text["Sam drinks tea."], by_text["Sam takes honey in tea."]
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.write() as writer:  # as dreaming links them
        await writer.add_relation(honey, tea, "extends", 0.9, now())

    near = await graph(running, around=honey, depth="1")
    assert (honey, tea) in edges(near, "extends")
    assert near["counts"]["byEdge"]["extends"] == 1
    tea_doc = next(m["documentId"] for m in listed["memories"] if m["id"] == tea)
    assert tea_doc not in {n["id"] for n in near["nodes"]}  # two steps away
    far = await graph(running, around=honey, depth="2")
    assert tea_doc in {n["id"] for n in far["nodes"]}

    found = await graph(running, q="honey")
    seeds = [n for n in found["nodes"] if n["seed"]]
    assert honey in {n["id"] for n in seeds}


async def test_bad_parameters_are_400_and_unknown_things_404(running: Running) -> None:
    for query in ({"depth": "0"}, {"depth": "4"}, {"limit": "0"}, {"limit": "501"},
                  {"depth": "x"}, {"q": " "}, {"around": ""}):  # fmt: skip
        status, body, _ = await call(running.unix, "GET", f"{NS}/graph", params=query)
        assert_error(status, body, 400)
    status, body, _ = await call(running.unix, "GET", f"{NS}/graph")
    assert_error(status, body, 404)
    await add(running, "Alex lives in Seattle.")
    await settle(running)
    status, body, _ = await call(running.unix, "GET", f"{NS}/graph", params={"around": "mem_0"})
    assert_error(status, body, 404)
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/bad%20name/graph")
    assert_error(status, body, 400)
    empty = await graph(running, q="zebra")  # a search may find nothing: an empty graph
    assert empty["truncated"] is False


async def test_a_hub_is_read_only_as_far_as_a_step_may_and_then_reads_as_truncated(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(running, documents=1)
    whole = await graph(running)
    document = whole["nodes"][0]["id"]
    assert whole["truncated"] is False and len(whole["nodes"]) >= 4
    monkeypatch.setattr(smemd.engine.graph, "LINKS_PER_STEP", 2)  # as for a document of thousands
    cut = await graph(running, around=document)
    assert cut["truncated"] is True
    assert len(cut["nodes"]) == 3 and cut["counts"]["byEdge"]["source"] == 2


async def test_an_entity_is_a_node_named_by_its_memories_and_a_centre(running: Running) -> None:
    await add(running, "Melanie ran a charity race in Boston.")
    await add(running, "Caroline: I went to the support group with Melanie.")
    await settle(running)
    _, listed, _ = await call(running.unix, "GET", f"{NS}/entities")
    ids = {e["name"]: e["id"] for e in listed["entities"]}
    melanie = ids["Melanie"]
    _, mine, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={"entity": melanie})
    memories = {m["id"] for m in mine["memories"]}
    assert len(memories) == 2

    body = await graph(running, around=melanie)
    centre = body["nodes"][0]
    assert centre == {
        "id": melanie, "kind": "entity", "label": "Melanie",
        "text": "Melanie (person)\n2 live memories name it", "status": "live", "isLatest": True,
        "seed": True, "entityKind": "person", "memories": 2, "type": None, "documentId": None,
    }  # fmt: skip
    assert {n["id"] for n in body["nodes"] if n["kind"] == "memory"} == memories
    assert edges(body, "mentions") == {(m, melanie) for m in memories}
    counts = body["counts"]
    assert counts["byKind"] == {"document": 0, "memory": 2, "entity": 1}
    assert counts["byEntityKind"] == {"person": 1, "place": 0, "organisation": 0, "thing": 0}
    assert counts["byEdge"]["mentions"] == 2

    # A step further: the memories' documents and the entities named beside Melanie.
    far = await graph(running, around=melanie, depth="2")
    kinds = {n["id"]: n.get("entityKind") for n in far["nodes"] if n["kind"] == "entity"}
    assert kinds == {melanie: "person", ids["Boston"]: "place", ids["Caroline"]: "person"}
    assert far["counts"]["byKind"]["document"] == 2
    assert (next(iter(memories)), melanie) in edges(far, "mentions")
    # From a document, its memories at one step and their entities at the next.
    document = next(n for n in far["nodes"] if n["kind"] == "document")["id"]
    around_doc = await graph(running, around=document, depth="2")
    assert melanie in {n["id"] for n in around_doc["nodes"]}


async def test_an_entity_named_by_thousands_of_memories_stays_within_the_bound(
    running: Running,
) -> None:
    await add(running, "The bakery opened on Main Street.")
    await settle(running)
    engine = running.daemon.state.engine
    assert engine is not None
    vector = np.ones(engine.indexes.dimension, dtype=np.float32)
    async with engine.store.write() as writer:  # as a large import would leave it
        for i in range(5000):
            new = NewMemory(
                id=f"mem_hub{i:05d}", namespace="people", text=f"Hubert baked loaf {i}.",
                type="fact", root_id=f"mem_hub{i:05d}", mentions=[Mention(name="Hubert")],
            )  # fmt: skip
            await writer.insert_memory(new, vector, now())
    _, listed, _ = await call(running.unix, "GET", f"{NS}/entities", params={"q": "Hubert"})
    hub = listed["entities"][0]
    assert hub["name"] == "Hubert" and hub["memories"] == 5000

    for depth in ("1", "3"):
        started = time.perf_counter()
        body = await graph(running, around=hub["id"], depth=depth, limit="100")
        assert time.perf_counter() - started < scaled(10)  # a bound read, not the 5,000
        assert len(body["nodes"]) == 100 and body["truncated"] is True
        assert body["nodes"][0]["id"] == hub["id"] and body["nodes"][0]["memories"] == 5000
        assert len(body["edges"]) < 300
    # The cut keeps the newest live mentions.
    assert "mem_hub04999" in {n["id"] for n in body["nodes"]}
    # Reached from one of its memories, the hub is one node, not a doorway to all 5,000.
    near = await graph(running, around="mem_hub00000", depth="2", limit="50")
    assert len(near["nodes"]) == 50 and near["truncated"] is True
