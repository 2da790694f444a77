"""Undoing an add through the real daemon: every route that adds documents answers its ingest id
(`Smem-Ingest-Id`), undo retracts what that add brought with the cascade, redo puts it back
exactly; run on both stores (tests/conftest.py BACKEND_SUITES)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Running
from tests.test_api import assert_error, call
from tests.test_export import export
from tests.test_memory_api import NS, settle

HEADER = "Smem-Ingest-Id"


async def add(running: Running, path: str, body: Any, **headers: str) -> str:
    async with running.unix.post(f"{NS}/{path}", json=body, headers=headers) as response:
        assert response.status == 200, await response.text()
        return response.headers[HEADER]


async def texts(running: Running) -> set[str]:
    status, body, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    assert status == 200
    return {m["memory"] for m in body["memories"]}


async def act(running: Running, ingest: str, verb: str) -> tuple[int, Any]:
    status, body, _ = await call(running.unix, "POST", f"{NS}/ingest/{ingest}/{verb}")
    return status, body


async def test_undo_takes_back_one_add_whole_and_redo_puts_it_back(running: Running) -> None:
    kept = await add(running, "document", {"content": "Alex lives in Seattle."})
    batch = await add(running, "document/batch", {"documents": [
        {"content": "Sam owns a red kite."}, {"content": "Jo drinks green tea every morning."},
    ]})  # fmt: skip
    assert kept != batch and batch.startswith("ing_")
    await settle(running)
    before = await texts(running)
    assert any("kite" in t for t in before) and any("tea" in t for t in before)

    status, undone = await act(running, batch, "undo")
    assert status == 200, undone
    assert undone["undone"] is True and len(undone["documents"]) == 2 and undone["withdrawn"]
    after = await texts(running)
    assert not any("kite" in t or "tea" in t for t in after)
    assert any("Seattle" in t for t in after)  # another add's memory stays
    status, again = await act(running, batch, "undo")  # done already: nothing to do
    assert status == 200 and again["documents"] == []

    status, redone = await act(running, batch, "redo")
    assert status == 200 and redone["undone"] is False and len(redone["documents"]) == 2
    assert await texts(running) == before
    assert_error(*(await act(running, "ing_nothing_here", "undo")), 404)


async def test_a_client_gathers_requests_into_one_add_and_an_import_is_one(
    running: Running,
) -> None:
    mine = "ing_client_made_1"
    for text in ("Mia plays the cello.", "Mia moved to Oslo."):
        assert await add(running, "document", {"content": text}, **{HEADER: mine}) == mine
    async with running.unix.post(
        f"{NS}/document", json={"content": "x"}, headers={HEADER: "not ok!"}
    ) as response:  # fmt: skip
        assert response.status == 400 and HEADER in (await response.json())["details"]
    await settle(running)
    status, undone = await act(running, mine, "undo")
    assert status == 200 and len(undone["documents"]) == 2
    assert not any("Mia" in t for t in await texts(running))
    status, _ = await act(running, mine, "redo")
    assert status == 200
    # An import is one add too: its reply names it, and undo takes the whole import back.
    _, body, _ = await export(running)
    status, _, _ = await call(running.unix, "DELETE", NS)
    assert status == 200
    async with running.unix.post(
        f"{NS}/import", data=body, headers={"Content-Type": "application/x-ndjson"}
    ) as response:  # fmt: skip
        reply = await response.json()
        assert response.status == 200, reply
        assert reply["ingestId"] == response.headers[HEADER]
    status, undone = await act(running, reply["ingestId"], "undo")
    assert status == 200 and len(undone["documents"]) == 2
    assert not any("Mia" in t for t in await texts(running))
