"""Facts about different things stay apart, however close their vectors: two thousand documents
of one template give two thousand memories; a revised document updates its own fact; deleting
a document removes exactly what it said."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Running
from tests.settling import until_idle
from tests.test_api import call

NS = "http://smemd/ns/kites"
N = 2000


def kites(i: int, count: int | None = None) -> str:
    return f"Person{i} owns {i + 3 if count is None else count} kites."


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def latest(running: Running) -> dict[str, dict[str, Any]]:
    """Every latest memory by its text."""
    found: dict[str, dict[str, Any]] = {}
    page = 1
    while True:
        status, body, _ = await call(
            running.unix, "POST", f"{NS}/list/memories?limit=100&page={page}", json={}
        )
        assert status == 200, body
        found |= {m["memory"]: m for m in body["memories"]}
        if page >= body["pagination"]["totalPages"]:
            return found
        page += 1


# 2,000 documents through the whole pipeline, about 19 ms each on the quiet 2-core machine: the
# hang guard is three times that per document (and the conftest scales it by the machine's pace);
# the waits for the queue fail only when it stops moving (tests/settling.py).
@pytest.mark.timeout(N * 0.06)
async def test_two_thousand_facts_of_one_template_stay_two_thousand(running: Running) -> None:
    for start in range(0, N, 500):
        documents = [
            {"content": kites(i), "id": f"doc-{i}"} for i in range(start, min(N, start + 500))
        ]
        status, body, _ = await call(
            running.unix, "POST", f"{NS}/document/batch", json={"documents": documents}
        )
        assert status == 200, body
    await settle(running)
    memories = await latest(running)
    assert set(memories) == {kites(i) for i in range(N)}
    assert all(m["documentId"] for m in memories.values())
    by_document = {m["documentId"]: m for m in memories.values()}
    assert len(by_document) == N  # each its own document's, none a second source of another's

    # A revision updates the document's own fact, wherever its neighbours rank.
    old = memories[kites(10)]
    status, body, _ = await call(
        running.unix, "PATCH", f"{NS}/document/doc-10", json={"content": kites(10, 1010)}
    )
    assert status == 200, body
    await settle(running)
    status, chain, _ = await call(running.unix, "GET", f"{NS}/memories/{old['id']}/history")
    assert status == 200, chain
    assert [(m["memory"], m["isLatest"]) for m in chain["memories"]] == [
        (kites(10), False), (kites(10, 1010), True),
    ]  # fmt: skip

    # Deleting one document removes exactly its fact.
    status, body, _ = await call(
        running.unix, "DELETE", f"{NS}/document", json={"ids": ["doc-115"]}
    )
    assert status == 200, body
    after = await latest(running)
    assert set(memories) - set(after) == {kites(115), kites(10)}
    assert set(after) - set(memories) == {kites(10, 1010)}
    status, found, _ = await call(
        running.unix, "POST", f"{NS}/search",
        json={"query": "How many kites does Person117 own?", "searchMode": "memories",
              "limit": 3, "threshold": 0},
    )  # fmt: skip
    assert status == 200, found
    assert found["results"][0]["memory"] == kites(117)
