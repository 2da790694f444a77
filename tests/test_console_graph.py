"""The console's Graph view in Chromium: the seeded namespace laid out in both themes, a legend
that says what the route counted, search hits highlighted, a picked node's neighbourhood, entities
drawn by kind with the memories that name them."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.browser import THEMES, chromium, seed
from tests.conftest import Running, StartDaemon
from tests.test_api import call


async def route(running: Running, **query: str) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", "http://smemd/ns/people/graph", params=query)
    assert status == 200, body
    return body


def hash_params(url: str) -> dict[str, str]:
    fragment = urlsplit(url).fragment
    return {k: v[0] for k, v in parse_qs(fragment.partition("?")[2]).items()}


async def node_ids(page: Any, selector: str = ".graph-canvas .node") -> set[str]:
    ids = await page.locator(selector).evaluate_all("nodes => nodes.map(n => n.dataset.id)")
    return set(ids)


async def shows(page: Any, expected: dict[str, Any]) -> None:
    """Wait until the canvas draws the nodes of `expected` (a route's reply): after a navigation
    the previous graph stays on screen until the next one is laid out."""
    want = {n["id"] for n in expected["nodes"]}
    for _ in range(100):
        if await node_ids(page) == want:
            return
        await asyncio.sleep(0.1)
    assert await node_ids(page) == want


async def test_the_graph_loads_clean_in_both_themes_with_the_routes_counts(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running)
    expected = await route(running)
    counts = expected["counts"]
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(running.url("/#/graph?ns=people"), theme=theme)
            page = tab.page
            await page.get_by_role("heading", name="Graph", level=1).wait_for()
            await page.locator(".graph-canvas .node").first.wait_for()
            assert await node_ids(page) == {n["id"] for n in expected["nodes"]}
            assert await page.locator(".graph-canvas .edge").count() == len(expected["edges"])
            legend = page.get_by_role("region", name="Legend")
            shown = {
                key: int(await legend.locator(f"[data-legend={key}]").inner_text())
                for key in ("document", "fact", "preference", "episode", "superseded",
                            "forgotten", "source", "updates", "extends", "derives", "contradicts",
                            "mentions", "person", "place", "organisation", "thing")
            }  # fmt: skip
            assert shown == {
                "document": counts["byKind"]["document"], **counts["byType"],
                "superseded": counts["byStatus"]["superseded"],
                "forgotten": counts["byStatus"]["forgotten"], **counts["byEdge"],
                **counts["byEntityKind"],
            }  # fmt: skip
            assert expected["truncated"] is True  # 120 documents, 150 nodes at most
            await page.get_by_role("status").get_by_text("the most the limit allows").wait_for()
            await tab.screenshot(f"graph-{theme}")
            tab.assert_clean()


async def test_a_search_highlights_its_hits_and_a_picked_node_shows_its_neighbours(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running, documents=40)
    async with chromium() as browser:
        tab = await browser.open(running.url("/#/graph?ns=people"))
        page = tab.page
        await page.locator(".graph-canvas .node").first.wait_for()
        search = page.get_by_label("Search the graph")
        await page.keyboard.press("/")  # the shell's key for the view's search
        assert await search.evaluate("el => el === document.activeElement")
        await search.fill("Alice rowing")
        await search.press("Enter")
        await page.wait_for_url("**q=Alice+rowing*")
        found = await route(running, q="Alice rowing")
        hits = {n["id"] for n in found["nodes"] if n["seed"]}
        assert hits
        await shows(page, found)
        assert await node_ids(page, ".graph-canvas .node.hit") == hits
        await tab.screenshot("graph-search")

        # Enter on a focused memory centres the graph on it and shows it beside the graph.
        target = next(n for n in found["nodes"] if n["kind"] == "memory" and n["status"] == "live")
        memory_id = target["id"]
        named = page.get_by_role("button", name=f"{target['type']}: {target['label']}", exact=True)
        assert await named.count() >= 1  # a node is a button named by its type and text
        await page.locator(f'.graph-canvas .node[data-id="{memory_id}"]').focus()
        await page.keyboard.press("Enter")
        await page.wait_for_url(f"**around={memory_id}*")
        around = await route(running, around=memory_id)
        await shows(page, around)
        await page.locator(f'.graph-canvas .node.selected[data-id="{memory_id}"]').wait_for()
        centre = next(n for n in around["nodes"] if n["id"] == memory_id)
        assert centre["documentId"] in await node_ids(page)  # its document is a neighbour
        side = page.get_by_role("complementary", name="Selected node")
        await side.get_by_text(centre["text"]).wait_for()
        link = side.get_by_role("link", name="Open in Memories")
        assert await link.get_attribute("href") == f"#/memories?ns=people&id={memory_id}"
        await tab.screenshot("graph-around-memory")

        # A click on its document card moves there, and the link goes to Documents.
        await page.locator(f'.graph-canvas .node[data-id="{centre["documentId"]}"]').click()
        await page.wait_for_url(f"**around={centre['documentId']}*")
        assert hash_params(page.url)["around"] == centre["documentId"]
        await side.get_by_role("heading", name="Document").wait_for()
        link = side.get_by_role("link", name="Open in Documents")
        assert (
            await link.get_attribute("href") == f"#/documents?ns=people&id={centre['documentId']}"
        )
        neighbours = await route(running, around=centre["documentId"])
        await shows(page, neighbours)
        tab.assert_clean()


async def test_entities_are_drawn_by_kind_and_a_picked_entity_shows_its_memories(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon()
    await seed(running, documents=20)
    status, listed, _ = await call(
        running.unix, "GET", "http://smemd/ns/people/entities", params={"kind": "person"}
    )
    assert status == 200, listed
    person = listed["entities"][0]
    async with chromium() as browser:
        for theme in THEMES:
            tab = await browser.open(
                running.url(f"/#/graph?ns=people&around={person['id']}&depth=2"), theme=theme
            )
            page = tab.page
            expected = await route(running, around=person["id"], depth="2")
            await shows(page, expected)
            entities = {n["id"]: n for n in expected["nodes"] if n["kind"] == "entity"}
            assert len(entities) >= 2  # the person and what their memories name beside them
            for kind in ("person", "place"):
                drawn = await node_ids(page, f".graph-canvas .node.entity.{kind}")
                assert drawn == {i for i, n in entities.items() if n["entityKind"] == kind}
            assert await page.locator(".graph-canvas .edge.mentions").count() == len(
                [e for e in expected["edges"] if e["kind"] == "mentions"]
            )
            legend = page.get_by_role("region", name="Legend")
            for kind, count in expected["counts"]["byEntityKind"].items():
                assert int(await legend.locator(f"[data-legend={kind}]").inner_text()) == count
            assert int(await legend.locator("[data-legend=mentions]").inner_text()) >= 1
            # The centre, selected, is read beside the graph, named by its kind.
            await page.locator(f'.graph-canvas .node.selected[data-id="{person["id"]}"]').wait_for()
            side = page.get_by_role("complementary", name="Selected node")
            await side.get_by_role("heading", name="Entity").wait_for()
            await side.get_by_text(f"{person['name']} (person)").wait_for()
            button = page.get_by_role("button", name=f"person: {person['name']},", exact=False)
            assert await button.count() == 1
            await tab.screenshot(f"graph-entity-{theme}")
            tab.assert_clean()

        # Picking a place moves the graph there; its link lists the memories naming it.
        place = next(n for n in entities.values() if n["entityKind"] == "place")
        await page.locator(f'.graph-canvas .node[data-id="{place["id"]}"] .shape').click()
        await page.wait_for_url(f"**around={place['id']}*")
        await shows(page, await route(running, around=place["id"], depth="2"))
        side = page.get_by_role("complementary", name="Selected node")
        link = side.get_by_role("link", name="Its memories")
        assert await link.get_attribute("href") == f"#/memories?ns=people&entity={place['id']}"
        await link.click()
        await page.get_by_role("heading", name="Memories", level=1).wait_for()
        status, named, _ = await call(
            running.unix, "POST", "http://smemd/ns/people/list/memories",
            json={"entity": place["id"]},
        )  # fmt: skip
        texts = sorted(m["memory"] for m in named["memories"])
        assert texts and all(place["label"] in t for t in texts)
        rows = page.get_by_role("region", name="Memory list").locator("tbody tr")
        for _ in range(100):
            if await rows.count() == len(texts):
                break
            await asyncio.sleep(0.1)
        shown = await rows.locator("td:first-child").evaluate_all(
            "cells => cells.map(c => c.firstChild.textContent)"
        )
        assert sorted(shown) == texts
        assert await page.get_by_label("Entity").input_value() == place["id"]
        tab.assert_clean()
