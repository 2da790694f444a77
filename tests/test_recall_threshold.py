"""A search's threshold is a floor on relevance, not on the cosine alone (Scorer.relevance): a
passage that BM25 finds stays when a small embedder's cosine with the question is below the
threshold, as code and logs often are; a passage nothing else points to is cut at its cosine."""

from __future__ import annotations

from typing import Any

from tests.conftest import Running
from tests.test_api import call
from tests.test_memory_api import NS, add, search, settle

LOG = (
    "User: the e2e run again:\n```\n$ pytest -q tests/e2e\n....F....\n"
    "FAILED tests/e2e/test_checkout.py::test_pay - TimeoutError: 30.0s\n"
    "1 failed, 8 passed in 41.2s\n```"
)
BREAD = "User: I baked sourdough bread this weekend and the crust came out great."
QUESTION = "What did we decide about the flaky checkout test?"
THRESHOLD = 0.4


def said(result: dict[str, Any]) -> str:
    return str(result.get("memory") or result.get("chunk"))


def best_similarity(results: list[dict[str, Any]], word: str) -> float:
    return max(r["similarity"] for r in results if word in said(r))


async def test_a_passage_bm25_finds_is_kept_above_its_cosine(running: Running) -> None:
    # Days apart: turns of one session would each be read with the other (tests/test_turn_context).
    for content, date in ((LOG, "2024-03-01T10:00:00Z"), (BREAD, "2024-03-05T10:00:00Z")):
        await add(running, content=content, date=date)
    await settle(running)
    every = await search(running, QUESTION, threshold=0, limit=20)
    # What makes the test mean something: both cosines are under the threshold.
    assert best_similarity(every, "test_checkout") < THRESHOLD
    assert best_similarity(every, "sourdough") < THRESHOLD

    kept = [said(r) for r in await search(running, QUESTION, threshold=THRESHOLD, limit=20)]
    assert any("test_checkout" in text for text in kept), kept
    assert not any("sourdough" in text for text in kept), kept
    # Relevance is on the cosine's scale: a threshold near 1 still cuts what BM25 found.
    assert await search(running, QUESTION, threshold=0.9, limit=20) == []


async def test_a_relevant_passage_lends_its_relevance_to_its_best_memory_only(
    running: Running,
) -> None:
    """Forgetting by query cuts at 0.5 in memories mode: of one document's sentences, the one
    the query names is selected, not the others beside it."""
    await add(
        running, content="The old pricing was 10 dollars a month. Kim enjoys hiking in the Alps."
    )
    await settle(running)
    every = await search(running, "old pricing", searchMode="memories", threshold=0)
    assert sorted(said(r) for r in every) == [
        "Kim enjoys hiking in the Alps.", "The old pricing was 10 dollars a month.",
    ]  # fmt: skip
    body = {"query": "old pricing", "dryRun": True}
    status, preview, _ = await call(running.unix, "DELETE", f"{NS}/memories/semantic", json=body)
    assert status == 200
    assert [m["memory"] for m in preview["matches"]] == ["The old pricing was 10 dollars a month."]
