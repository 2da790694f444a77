"""Re-deriving a namespace from its documents through the real daemon: the shadow is built by
the worker as any add, the diff names what would change (a hand edit the documents do not say
is gone; a label is listed as not carried over), apply swaps it in, discard drops it."""

from __future__ import annotations

from typing import Any

from tests.conftest import Running
from tests.test_api import assert_error, call
from tests.test_memory_api import NS, add, settle

REDERIVE = f"{NS}/rederive"


async def texts(running: Running, ns: str = NS) -> set[str]:
    status, body, _ = await call(running.unix, "POST", f"{ns}/list/memories", json={})
    assert status == 200
    return {m["memory"] for m in body["memories"]}


async def ready(running: Running) -> dict[str, Any]:
    await settle(running)
    status, diff, _ = await call(running.unix, "GET", REDERIVE)
    assert status == 200, diff
    assert diff["state"] == "ready" and diff["pending"] == 0
    return diff


async def test_a_rederivation_shows_what_would_change_then_applies(running: Running) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    await add(running, "Alex moved to Portland.", id="b")
    await add(running, "Sam owns a red kite.", id="c")
    await settle(running)
    status, listed, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    kite = next(m for m in listed["memories"] if "kite" in m["memory"])
    status, _, _ = await call(
        running.unix,
        "PATCH",
        f"{NS}/memories/{kite['id']}",
        json={"memory": "Sam owns a blue kite."},
    )
    assert status == 200
    portland = next(m for m in listed["memories"] if "Portland" in m["memory"])
    status, body, _ = await call(
        running.unix,
        "POST",
        "http://smemd/v1/labels",
        json={"memoryId": portland["id"], "type": "episode"},
    )
    assert status == 201, body
    before = await texts(running)
    status, started, _ = await call(running.unix, "POST", REDERIVE)
    assert status == 200, started
    assert started["shadow"] == "people:rederive" and started["documents"] == 3
    assert_error(*(await call(running.unix, "POST", REDERIVE))[:2], 409)
    assert await texts(running) == before  # the namespace serves as it was meanwhile
    diff = await ready(running)
    assert "Sam owns a blue kite." in diff["examples"]["gone"]
    assert any("red kite" in t for t in diff["examples"]["added"])
    assert diff["counts"]["gone"] == 1 and diff["counts"]["added"] == 1
    assert diff["notCarried"] == [f"label type episode on {portland['memory']}"], diff

    status, applied, _ = await call(running.unix, "POST", f"{REDERIVE}/apply")
    assert status == 200 and applied["state"] == "applied"
    after = await texts(running)
    assert "Sam owns a blue kite." not in after and any("red kite" in t for t in after)
    assert any("Portland" in t for t in after)
    status, doc, _ = await call(running.unix, "GET", f"{NS}/document/b")
    assert status == 200 and "Portland" in doc["content"]  # custom ids kept
    assert_error(*(await call(running.unix, "GET", REDERIVE))[:2], 404)


async def test_a_rederivation_discarded_leaves_the_namespace_as_it_was(running: Running) -> None:
    await add(running, "Jo drinks green tea every morning.", id="t")
    await settle(running)
    before = await texts(running)
    status, _, _ = await call(running.unix, "POST", REDERIVE)
    assert status == 200
    await ready(running)
    status, dropped, _ = await call(running.unix, "DELETE", REDERIVE)
    assert status == 200 and dropped["state"] == "discarded"
    assert await texts(running) == before
    status, _, _ = await call(running.unix, "GET", "http://smemd/ns/people:rederive")
    assert status == 404
    # A document added after it began: apply refuses, as the shadow lacks it.
    status, _, _ = await call(running.unix, "POST", REDERIVE)
    assert status == 200
    await ready(running)
    await add(running, "Jo moved to Leeds.", id="u")
    await settle(running)
    status, body, _ = await call(running.unix, "POST", f"{REDERIVE}/apply")
    assert_error(status, body, 409)
    assert "discard" in body["details"]
    assert_error(*(await call(running.unix, "GET", "http://smemd/ns/nowhere/rederive"))[:2], 404)
