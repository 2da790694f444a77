"""smemctl's judge commands against the in-process daemon: dreaming shown and switched, the judge's
log listed, labels recorded, and a fit that moves the type threshold."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from smemctl.cli import main
from tests.conftest import Running, StartDaemon
from tests.dreams import (
    BOILER,
    EARLY,
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
)
from tests.dreams import with_model as model_daemon
from tests.fakes.llama_server import FakeLlamaServer
from tests.test_api import call

# Three sure-right and three unsure-wrong picks of the graded set.
GRADED_HERE = {
    text: GRADED[text]
    for text in (
        "Alex works as a nurse at the city hospital.",
        "Sam prefers window seats on long flights.",
        "Priya speaks Hindi and Portuguese fluently.",
        "Mia enjoys baking sourdough bread.",
        "Leo moved to Berlin in June 2023.",
        "Nora is allergic to peanuts.",
    )
}


@pytest.fixture(autouse=True)
def pipe_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output into a pipe is not cut to a width unless $COLUMNS says so."""
    monkeypatch.delenv("COLUMNS", raising=False)


TABLES = tables()


@pytest.fixture
async def servers() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    async with fake_pair(TABLES) as fakes:
        yield fakes


async def dreamt_store(
    start_daemon: StartDaemon,
    state_dir: Path,
    servers: dict[str, FakeLlamaServer],
    texts: list[str],
) -> Running:
    await heuristic_store(start_daemon, state_dir, servers["embed"], texts)
    running = await model_daemon(start_daemon, state_dir, servers["embed"], servers["llm"])
    await dreamt(running)
    return running


async def smemctl(
    running: Running, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """smemctl in a thread: its client blocks, and the daemon runs on this loop."""
    code = await asyncio.to_thread(main, ["--socket", str(running.daemon.config.socket), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(out: str) -> list[list[str]]:
    """A table's rows (header first) split into cells, which are two or more spaces apart."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.strip()]


def keyed(out: str, column: int) -> dict[str, list[str]]:
    return {row[column]: row for row in rows(out)}


async def get(running: Running, path: str) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{V1}{path}")
    assert status == 200, body
    return dict(body)


async def test_dreaming_shows_its_state_and_switches_off_and_on(
    short_dir: Path,
    start_daemon: StartDaemon,
    servers: dict[str, FakeLlamaServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    await heuristic_store(start_daemon, short_dir, servers["embed"], [TEA, BOILER])
    TABLES.asked.clear()
    running = await model_daemon(
        start_daemon, short_dir, servers["embed"], servers["llm"], quiet_s=600
    )
    code, out, err = await smemctl(running, capsys, "dreaming")
    assert code == 0, err
    shown = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines())
    assert shown["enabled"] == "yes" and shown["state"] == "waiting", out
    assert "dreams after 600 s" in out and "2 untyped, 2 unlinked" in out, out
    assert "0 of 0 asked" in out, out

    code, out, err = await smemctl(running, capsys, "dreaming", "off")
    assert code == 0, err
    assert re.search(r"^enabled\s+no$", out, re.M) and re.search(r"^state\s+off$", out, re.M), out
    now = await get(running, "/dreaming")
    assert now["enabled"] is False and now["state"] == "off"

    code, out, err = await smemctl(running, capsys, "--json", "dreaming", "on")
    assert code == 0, err
    assert json.loads(out)["enabled"] is True
    now = await get(running, "/dreaming")
    assert now["enabled"] is True and now["state"] == "waiting" and TABLES.asked == []

    code, out, err = await smemctl(running, capsys, "dreaming", "maybe")
    assert code == 2 and out == "" and "invalid choice: 'maybe'" in err
    assert (await get(running, "/dreaming"))["enabled"] is True


async def test_judgements_listed_and_labels_recorded(
    short_dir: Path,
    start_daemon: StartDaemon,
    servers: dict[str, FakeLlamaServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = await dreamt_store(start_daemon, short_dir, servers, [TEA, HONEY, BOILER, EARLY])
    found = await memories(running)
    code, out, err = await smemctl(running, capsys, "judgements", "--kind", "type")
    assert code == 0, err
    header, *lines = rows(out)
    assert header == ["id", "kind", "p", "decided", "applied", "text", "label"]
    listed = {row[5]: row for row in lines}
    assert set(listed) == {TEA, HONEY, BOILER, EARLY} and {r[1] for r in lines} == {"type"}
    assert listed[BOILER][2:5] == ["0.900", "yes", "episode"] and listed[BOILER][6] == "-"
    assert listed[EARLY][2:5] == ["0.400", "no", "preference"]
    calls = {c["text"]: c for c in await judgements(running, "type")}
    assert {text: row[0] for text, row in listed.items()} == {t: c["id"] for t, c in calls.items()}
    # A page at a time: the next page starts after the last call shown.
    code, out, err = await smemctl(running, capsys, "judgements", "--kind", "type", "--limit", "3")
    *page, more = out.splitlines()
    assert code == 0 and len(page) == 4 and more.startswith("more: --after "), out
    after = more.removeprefix("more: --after ")
    code, out, err = await smemctl(
        running, capsys, "judgements", "--kind", "type", "--after", after
    )
    assert code == 0 and [row[5] for row in rows(out)[1:]] == [lines[3][5]], out

    # A memory's true type.
    boiler = found[BOILER]["id"]
    code, out, err = await smemctl(running, capsys, "label", "type", boiler, "fact")
    assert (code, out) == (0, f"labelled type {boiler}: fact\n"), err
    now = await memories(running)
    assert now[BOILER]["type"] == "fact" and now[BOILER]["typedBy"] == "label"

    # A call that was wrong.
    tea_call = calls[TEA]["id"]
    code, out, err = await smemctl(running, capsys, "label", "wrong", tea_call)
    assert (code, out) == (0, f"labelled judgement {tea_call}: wrong\n"), err
    assert {c["text"]: c["label"] for c in await judgements(running, "type")}[TEA] == "wrong"

    # A link that was wrong: it goes, and the log shows the label.
    honey, tea = found[HONEY]["id"], found[TEA]["id"]
    assert await siblings(running, honey) == [TEA]
    code, out, err = await smemctl(running, capsys, "label", "link", honey, tea, "wrong")
    assert code == 0, err
    assert await siblings(running, honey) == []
    (link,) = [c for c in await judgements(running, "link") if c["subjectId"] == honey]
    assert out == f"labelled judgement {link['id']}: wrong\n" and link["label"] == "wrong"
    code, out, err = await smemctl(running, capsys, "judgements", "--kind", "link")
    assert code == 0, err
    assert keyed(out, 5)[HONEY][6] == "wrong" and keyed(out, 5)[HONEY][4] == f"extends:{tea}"

    # What the daemon refuses is its error line and exit 1; what argparse refuses, exit 2.
    code, out, err = await smemctl(running, capsys, "label", "right", "jdg_0")
    assert (code, out) == (1, "") and "error 404" in err and "no judgement jdg_0" in err, err
    code, out, err = await smemctl(running, capsys, "label", "type", boiler, "opinion")
    assert (code, out) == (2, "") and "invalid choice: 'opinion'" in err, err
    code, _, err = await smemctl(running, capsys, "label", "link", honey, tea, "maybe")
    assert code == 2, err
    assert (await memories(running))[BOILER]["type"] == "fact"


async def test_calibration_shows_judges_and_a_fit_moves_the_threshold(
    short_dir: Path,
    start_daemon: StartDaemon,
    servers: dict[str, FakeLlamaServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = await dreamt_store(start_daemon, short_dir, servers, list(GRADED_HERE))
    code, out, err = await smemctl(running, capsys, "calibration")
    assert code == 0, err
    judges = keyed(out, 0)
    assert judges["kind"][:4] == ["kind", "threshold", "default", "labels"]
    assert judges["type"][1:4] == ["0.500", "0.500", "0"] and judges["type"][6:] == ["-", "-", "-"]
    assert judges["link"][1:3] == ["0.800", "0.800"]

    found = await memories(running)
    calls = {c["text"]: c["id"] for c in await judgements(running, "type")}
    for text, (pick, _, truth) in GRADED_HERE.items():
        if pick == truth:
            args = ["right", calls[text]]
        elif text.startswith("Leo"):  # a wrong call, said so
            args = ["wrong", calls[text]]
        else:
            args = ["type", found[text]["id"], truth]
        code, _, err = await smemctl(running, capsys, "label", *args)
        assert code == 0, err
    code, out, err = await smemctl(running, capsys, "calibration")
    assert code == 0, err
    assert keyed(out, 0)["type"][1:8] == ["0.500", "0.500", "6", "6", "3", "50%", "100%"], out

    code, out, err = await smemctl(running, capsys, "calibration", "--fit")
    assert code == 0, err
    fit_table, after_table = out.split("\n\n")
    fits = keyed(fit_table, 0)
    assert fits["kind"] == ["kind", "threshold", "labels", "outcome", "reapplied", "review"]
    before, after = fits["type"][1].split(" -> ")
    assert before == "0.500" and UNSURE < float(after) < SURE, fit_table
    assert fits["type"][2:4] == ["6", "fitted"] and fits["reconcile"][3] == "too few labels"
    now = keyed(after_table, 0)["type"]
    assert now[1] == after and now[2] == "0.500" and now[8] != "-", after_table
    assert now[4:8] == ["3", "3", "100%", "50%"], after_table  # the unsure calls no longer stand
    threshold = {j["kind"]: j["threshold"] for j in (await get(running, "/calibration"))["judges"]}
    assert f"{threshold['type']:.3f}" == after


async def siblings(running: Running, memory_id: str) -> list[str]:
    status, body, _ = await call(running.unix, "GET", f"{NS}/memories/{memory_id}?include=related")
    assert status == 200, body
    return [m["memory"] for m in body["included"]["related"]["siblings"]]
