"""Calibration through the daemon: labels grade the judge's logged calls, a fit moves the
threshold where the labels disagree with it, and the past calls are redone under it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from smemd.engine.judgement import logistic
from tests.conftest import Running, StartDaemon
from tests.dreams import (
    GRADED,
    HONEY,
    NS,
    SURE,
    TEA,
    UNSURE,
    V1,
    dreamt,
    fake_pair,
    heuristic_store,
    judgements,
    memories,
    tables,
    with_model,
)
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import assert_error, call

UNLABELLED = {"The team shipped version two on Friday.", "Ivy adores black coffee."}

TABLES = tables()


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    async with fake_pair(TABLES) as fakes:
        yield fakes


async def label(running: Running, body: dict[str, Any], expected: int = 201) -> dict[str, Any]:
    status, reply, _ = await call(running.unix, "POST", f"{V1}/labels", json=body)
    assert status == expected, reply
    return dict(reply)


async def report(running: Running) -> dict[str, dict[str, Any]]:
    status, body, _ = await call(running.unix, "GET", f"{V1}/calibration")
    assert status == 200, body
    return {judge["kind"]: judge for judge in body["judges"]}


async def test_labels_that_disagree_move_the_type_threshold(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], list(GRADED))
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    await dreamt(running)
    found = await memories(running)
    calls = {c["text"]: c for c in await judgements(running, "type")}
    assert found["Mia enjoys baking sourdough bread."]["type"] == "fact"  # the unsure pick stood
    before = await report(running)
    assert before["type"]["threshold"] == 0.5 and before["type"]["labels"] == 0
    assert before["link"]["threshold"] == 0.8  # the conservative judge

    for text, (pick, _, truth) in GRADED.items():
        if text in UNLABELLED:
            continue
        if pick == truth:  # ✓ on the call
            await label(running, {"judgementId": calls[text]["id"], "correct": True})
        else:  # the memory's true type
            done = await label(running, {"memoryId": found[text]["id"], "type": truth})
            assert done["kind"] == "type" and done["value"] == truth
    graded = (await report(running))["type"]
    assert (graded["labels"], graded["decided"], graded["correct"]) == (10, 10, 5)
    assert graded["accuracy"] == 0.5

    status, fit, _ = await call(running.unix, "POST", f"{V1}/calibration/fit")
    assert status == 200, fit
    results = {r["kind"]: r for r in fit["results"]}
    assert results["type"]["outcome"] == "fitted" and results["type"]["before"] == 0.5
    assert UNSURE < results["type"]["after"] < SURE, results
    assert results["type"]["reapplied"] == 1  # Ivy's unsure pick, now undecided
    assert results["reconcile"]["outcome"] == "too few labels"
    after = (await report(running))["type"]
    assert after["threshold"] == results["type"]["after"] and after["fitted"]["labels"] == 10
    assert (after["decided"], after["correct"], after["accuracy"]) == (5, 5, 1.0)
    assert after["coverage"] == 0.5

    now = await memories(running)
    ivy = now["Ivy adores black coffee."]  # back to the heuristic's type
    assert ivy["type"] == "fact" and "typedBy" not in ivy
    shipped = now["The team shipped version two on Friday."]  # a sure pick stands
    assert shipped["type"] == "episode" and shipped["typedBy"] == "judge"
    mia = now["Mia enjoys baking sourdough bread."]  # a person's word is not overturned
    assert mia["type"] == "preference" and mia["typedBy"] == "label"

    # The fitted threshold outlives the daemon.
    await running.daemon.shutdown()
    again = await with_model(
        start_daemon, short_dir, servers["embed"], servers["llm"], name="again.toml"
    )
    assert (await report(again))["type"]["threshold"] == after["threshold"]


async def test_a_label_on_a_link_makes_or_removes_it(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA, HONEY])
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    await dreamt(running)
    found = await memories(running)
    tea, honey = found[TEA]["id"], found[HONEY]["id"]
    assert await related(running, honey) == [(TEA, "extends")]
    wrong = await label(running, {"link": {"fromId": honey, "toId": tea}, "correct": False})
    assert wrong["kind"] == "judgement" and wrong["value"] == "wrong"
    assert await related(running, honey) == []
    (link,) = [c for c in await judgements(running, "link") if c["subjectId"] == honey]
    assert link["label"] == "wrong"
    await label(running, {"judgementId": link["id"], "correct": True})
    assert await related(running, honey) == [(TEA, "extends")]
    await label(running, {"link": {"fromId": tea, "toId": honey}, "correct": True}, expected=404)

    # A hard delete of the document takes the memory's calls and their labels with it: the
    # judge's log quotes the text.
    assert (await report(running))["link"]["labels"] == 1
    doc = found[HONEY]["documentId"]
    status, body, _ = await call(running.unix, "DELETE", f"{NS}/document", json={"ids": [doc]})
    assert status == 200, body
    for kind in ("type", "link"):
        assert HONEY not in {c["text"] for c in await judgements(running, kind)}
    assert (await report(running))["link"]["labels"] == 0


async def related(running: Running, memory_id: str) -> list[tuple[str, str]]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/memories/{memory_id}?include=related")
    assert status == 200, body
    return [(m["memory"], m["relation"]) for m in body["included"]["related"]["siblings"]]


async def test_bad_labels_get_clear_errors(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA])
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    await dreamt(running)
    memory_id = (await memories(running))[TEA]["id"]
    bad = [
        {},
        {"memoryId": memory_id},
        {"memoryId": memory_id, "type": "opinion"},
        {"memoryId": memory_id, "type": "fact", "correct": True},
        {"judgementId": "jdg_1"},
        {"link": {"fromId": memory_id}, "correct": True},
        {"memoryId": memory_id, "type": "fact", "confidence": 1},
        {"judgementId": 7, "correct": True},
    ]
    for body in bad:
        status, reply, _ = await call(running.unix, "POST", f"{V1}/labels", json=body)
        assert_error(status, reply, 400)
    for body in ({"memoryId": "mem_0", "type": "fact"}, {"judgementId": "jdg_0", "correct": False}):
        status, reply, _ = await call(running.unix, "POST", f"{V1}/labels", json=body)
        assert_error(status, reply, 404)
    status, reply, _ = await call(running.unix, "GET", f"{V1}/judgements?kind=mood")
    assert_error(status, reply, 400)
    # Nothing was labelled by any of it.
    assert all(j["labels"] == 0 for j in (await report(running)).values())


def test_the_fit_puts_the_threshold_between_wrong_and_right() -> None:
    xs = [0.6, 0.62, 0.65, 0.9, 0.93, 0.97]
    threshold = logistic.threshold(*logistic.fit(xs, [False] * 3 + [True] * 3))
    assert 0.65 < threshold < 0.9
    # Right everywhere: trust every pick; wrong everywhere: none.
    assert logistic.threshold(*logistic.fit(xs, [True] * 6)) < 0.34
    assert logistic.threshold(*logistic.fit(xs, [False] * 6)) == 1.0
    # Equally often right at every probability: the probability tells nothing, so the judge is
    # trusted if it is mostly right, and not if mostly wrong.
    each = [x for x in xs for _ in range(3)]
    assert logistic.threshold(*logistic.fit(each, [True, True, False] * 6)) == 0.0
    assert logistic.threshold(*logistic.fit(each, [True, False, False] * 6)) == 1.0


async def test_the_log_is_read_by_kind_namespace_and_page(
    short_dir: Path, start_daemon: StartDaemon, servers: dict[str, FakeLlamaServer]
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA, HONEY])
    running = await with_model(start_daemon, short_dir, servers["embed"], servers["llm"])
    await dreamt(running)
    every = await call(running.unix, "GET", f"{V1}/judgements")
    assert every[0] == 200 and len(every[1]["judgements"]) == 4  # two types, two links
    assert every[1]["nextAfter"] is None
    first = (await call(running.unix, "GET", f"{V1}/judgements?limit=3"))[1]
    rest = (await call(running.unix, "GET", f"{V1}/judgements?after={first['nextAfter']}"))[1]
    assert [c["id"] for c in first["judgements"] + rest["judgements"]] == [
        c["id"] for c in every[1]["judgements"]
    ]
    other = (await call(running.unix, "GET", f"{V1}/judgements?namespace=elsewhere"))[1]
    assert other["judgements"] == []
    for bad in ("limit=0", "after=-1", "limit=x"):
        status, reply, _ = await call(running.unix, "GET", f"{V1}/judgements?{bad}")
        assert_error(status, reply, 400)
