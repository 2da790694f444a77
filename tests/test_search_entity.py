"""Search kept to one entity through the real daemon: the memories naming it, the chunks those
were read from, by id or by name, and nothing for an entity the namespace does not have."""

from __future__ import annotations

from typing import Any

from tests.conftest import Running
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, search, settle


async def entity_ids(running: Running) -> dict[str, str]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/entities")
    assert status == 200, body
    return {e["name"]: e["id"] for e in body["entities"]}


def memories(results: list[dict[str, Any]]) -> set[str]:
    return {r["memory"] for r in results if r.get("memory")}


async def test_search_keeps_to_the_memories_naming_an_entity_and_their_chunks(
    running: Running,
) -> None:
    docs = {
        "race": await add(running, "Melanie ran a charity race in Boston."),
        "group": await add(running, "Caroline: I went to the support group with Melanie."),
        "paint": await add(running, "My friend Caroline paints landscapes by the lake."),
        "swim": await add(running, "Jonas swims in the lake every morning."),
    }
    await settle(running)
    ids = await entity_ids(running)
    every = memories(await search(running, "the lake", threshold=0, searchMode="memories"))
    assert "Jonas swims in the lake every morning." in every  # unrestricted, it is found

    caroline = {
        "Caroline: I went to the support group with Melanie.",
        "My friend Caroline paints landscapes by the lake.",
    }
    for entity in (ids["Caroline"], "caroline", "CAROLINE"):
        found = await search(running, "the lake", threshold=0, limit=20, entity=entity)
        assert memories(found) == caroline
        chunked = {r["documentId"] for r in found if r.get("chunk")}
        assert chunked and chunked <= {docs["group"]["id"], docs["paint"]["id"]}
        only_chunks = await search(
            running, "the lake", threshold=0, searchMode="chunks", entity=entity
        )
        assert {r["documentId"] for r in only_chunks} == {docs["group"]["id"], docs["paint"]["id"]}

    melanie = await search(running, "race", threshold=0, searchMode="memories", entity="Melanie")
    assert memories(melanie) == {
        "Melanie ran a charity race in Boston.",
        "Caroline: I went to the support group with Melanie.",
    }
    # With other restrictions: a filter, time travel.
    flt = {"operator": "and", "operands": [{"field": "x", "operator": "neq", "value": 1}]}
    both = await search(
        running, "lake", threshold=0, searchMode="memories", entity="Caroline", filter=flt,
        asOf="2100-01-01T00:00:00Z",
    )  # fmt: skip
    assert memories(both) == caroline

    # An entity the namespace does not have: nothing found, not an error.
    assert await search(running, "the lake", threshold=0, entity="Nobody") == []
    assert await search(running, "the lake", threshold=0, entity="ent_missing") == []
    for bad in ("", 7, "x" * 256):
        status, body, _ = await call(
            running.unix, "POST", f"{NS}/search", json={"query": "lake", "entity": bad}
        )
        assert_error(status, body, 400)


async def test_an_update_moves_the_entity_search_to_the_new_version(running: Running) -> None:
    await add(running, "Alex lives in Seattle.")
    await settle(running)
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    old = listed["memories"][0]
    status, new, _ = await call(
        running.unix, "PATCH", f"{NS}/memories/{old['id']}", json={"memory": "Alex lives in Oslo."}
    )
    assert status == 200, new
    found = await search(running, "where does Alex live", threshold=0, entity="Alex")
    assert memories(found) == {"Alex lives in Oslo."}
    # Seattle is named only by the old version: the latest versions do not name it.
    assert memories(await search(running, "Alex", threshold=0, entity="Seattle")) == set()
    before = await search(
        running, "Alex", threshold=0, entity="Seattle", asOfRecorded="2000-01-01T00:00:00Z"
    )
    assert before == []  # smem knew nothing then
