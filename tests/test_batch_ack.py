"""A batch is acknowledged as fast with a full queue as with an empty one: its documents go in
one commit, which waits for the store's writer once, not once per document behind the worker's
commits; and a batch holding a document of another kind (a revision of one of its own, an id
sent twice, a bad date) is still stored as one."""

from __future__ import annotations

import statistics
import time
from typing import Any

from tests.conftest import Running
from tests.pace import scaled
from tests.settling import until_idle
from tests.test_api import call
from tests.test_memory_api import settle

NS = "http://smemd/ns/acks"
BATCH = 100


def turns(start: int) -> list[dict[str, str]]:
    return [
        {"content": f"Turn {i}: Sam moved the blue kite to shelf {i % 17} in the garage."}
        for i in range(start, start + BATCH)
    ]


async def ack(running: Running, documents: list[dict[str, str]]) -> float:
    started = time.perf_counter()
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch", json={"documents": documents}
    )
    took = time.perf_counter() - started
    assert status == 200 and body["count"] == len(documents), body
    return took


async def test_a_batch_is_acknowledged_as_fast_with_a_full_queue(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    empty = []
    for round_ in range(2):  # the queue empty each time: the baseline
        empty.append(await ack(running, turns(round_ * BATCH)))
        await until_idle(engine)
    full = [await ack(running, turns((2 + n) * BATCH)) for n in range(6)]
    # The worker had most of those 600 jobs still to do while the last were acknowledged.
    status, body, _ = await call(running.unix, "GET", "http://smemd/v1/jobs?limit=1")
    assert status == 200, body
    assert sum(n for phase, n in body["counts"].items() if phase not in ("done", "failed")) > 200
    later = sorted(full[1:])
    assert statistics.median(later) < 3 * max(empty) + scaled(0.05), (empty, full)
    assert later[-1] < scaled(0.5), (empty, full)


async def _kite(running: Running) -> dict[str, object]:
    """Document "a", added alone before a batch revises it."""
    status, first, _ = await call(
        running.unix, "POST", f"{NS}/document", json={"content": "Ana owns a red kite.", "id": "a"}
    )
    assert status == 200, first
    return first


async def _batch(running: Running, documents: list[dict[str, object]]) -> dict[str, Any]:
    status, body, _ = await call(
        running.unix, "POST", f"{NS}/document/batch", json={"documents": documents}
    )
    assert status == 200, body
    return body


async def _assert_contents(running: Running, contents: dict[str, str]) -> None:
    for custom, content in contents.items():
        status, doc, _ = await call(running.unix, "GET", f"{NS}/document/{custom}")
        assert status == 200 and doc["content"] == content, doc


async def test_a_batch_with_revisions_repeats_and_a_bad_date_is_stored_in_one(
    running: Running,
) -> None:
    first = await _kite(running)
    body = await _batch(running, [
        {"content": "Ana owns a green kite.", "id": "a"},  # a revision
        {"content": "Bo keeps bees.", "id": "b"},
        {"content": "Bo keeps bees.", "id": "b"},  # the same again: a no-op
        {"content": "Cy sails.", "id": "c", "metadata": {"when": "x"}},
        {"content": "Di rows.", "id": "d", "date": "not a date"},
    ])  # fmt: skip
    assert (body["count"], body["failed"]) == (4, 1), body
    results = body["results"]
    assert results[0]["id"] == first["id"]  # the revision keeps its document
    assert results[1]["id"] == results[2]["id"]
    [refused] = [r for r in results if r["status"] == "error"]
    assert refused["id"] == "d" and "date" in refused["error"] + str(refused["details"]), refused
    await _assert_contents(running, {"a": "Ana owns a green kite.", "b": "Bo keeps bees."})


async def test_a_batch_whose_one_document_the_store_refuses_keeps_the_others(
    running: Running,
) -> None:
    # A retracted document cannot be revised: its refusal comes from inside the batch's one
    # commit, which is then undone, and the batch is stored one document at a time instead.
    await _kite(running)
    await settle(running)
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/a/retract")
    assert status == 200, body
    body = await _batch(running, [
        {"content": "Bo keeps bees.", "id": "b"},
        {"content": "Ana owns a green kite.", "id": "a"},  # a revision of the retracted
        {"content": "Cy sails.", "id": "c"},
    ])  # fmt: skip
    assert (body["count"], body["failed"]) == (2, 1), body
    [refused] = [r for r in body["results"] if r["status"] == "error"]
    assert refused["id"] == "a" and "retracted" in refused["error"], refused
    await _assert_contents(
        running, {"b": "Bo keeps bees.", "c": "Cy sails.", "a": "Ana owns a red kite."}
    )
