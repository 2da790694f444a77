"""Contradictions for review, through the in-process daemon: listed per namespace and across a
token's, resolved by keeping one or both, dropped when a memory no longer stands, refused with a
clear error, and shown by smemctl. Ingest does not yet link contradictions, so each test ingests
two distinct facts and links them through the daemon's own store writer."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from smemctl.cli import main as smemctl
from smemd.store.records import pair_subject
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.raw_sqlite import read_rows
from tests.settling import until_idle
from tests.test_api import assert_error, call

NS = "people"
# Pairs of facts the heuristic keeps as two memories (neither updates the other).
CAR = ("Sam's car is red.", "Sam's car is blue.")
TEA = ("Alex likes tea.", "Alex likes coffee.")
PETS = ("Mia plays the guitar.", "Mia plays the piano.")


def base(ns: str = NS) -> str:
    return f"http://smemd/ns/{ns}"


async def settle(running: Running) -> None:
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)


async def remember(running: Running, ns: str, text: str) -> str:
    """Ingest one fact and return its memory's id."""
    status, body, _ = await call(
        running.unix, "POST", f"{base(ns)}/document", json={"content": text}
    )
    assert status == 200, body
    await settle(running)
    status, listed, _ = await call(
        running.unix, "POST", f"{base(ns)}/list/memories?limit=100", json={}
    )
    (found,) = [m for m in listed["memories"] if m["memory"] == text]
    return str(found["id"])


async def contradiction(running: Running, pair: tuple[str, str], ns: str = NS) -> tuple[str, str]:
    """Two facts as memories, the second (newer) linked as contradicting the first: (newer, older)."""
    older = await remember(running, ns, pair[0])
    newer = await remember(running, ns, pair[1])
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.write() as writer:
        await writer.add_relation(newer, older, "contradicts", 0.9, time.time())
    return newer, older


async def review(running: Running, ns: str = NS, query: str = "") -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{base(ns)}/review{query}")
    assert status == 200, body
    return body


async def resolve(
    running: Running, memory_id: str, other_id: str, keep: str, ns: str = NS
) -> tuple[int, Any]:
    status, body, _ = await call(
        running.unix, "POST", f"{base(ns)}/review",
        json={"memoryId": memory_id, "contradicts": other_id, "keep": keep},
    )  # fmt: skip
    return status, body


async def memory(running: Running, memory_id: str, ns: str = NS) -> dict[str, Any]:
    status, body, _ = await call(running.unix, "GET", f"{base(ns)}/memories/{memory_id}")
    assert status == 200, body
    return body


def pairs(listed: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["memory"]["id"], c["contradicts"]["id"]) for c in listed["contradictions"]]


async def test_listed_newest_first_with_both_memories_in_full(running: Running) -> None:
    car = await contradiction(running, CAR)
    tea = await contradiction(running, TEA)
    pets = await contradiction(running, PETS)
    listed = await review(running)
    assert pairs(listed) == [pets, tea, car]
    assert listed["pagination"] == {"currentPage": 1, "limit": 20, "totalItems": 3, "totalPages": 1}
    first = listed["contradictions"][0]
    assert first["namespace"] == NS and first["score"] == 0.9 and first["label"] is None
    assert first["createdAt"].endswith("Z")
    assert first["memory"]["memory"] == PETS[1] and first["contradicts"]["memory"] == PETS[0]
    for side in ("memory", "contradicts"):  # rendered as the memory routes render them
        assert first[side] == await memory(running, first[side]["id"])
    page = await review(running, query="?limit=2&page=2")
    assert pairs(page) == [car] and page["pagination"]["totalPages"] == 2

    # A contradiction is a link `related` shows, and no support for the profile's order.
    path = f"{base()}/memories/{car[0]}?include=related"
    status, body, _ = await call(running.unix, "GET", path)
    assert status == 200, body
    assert [(s["id"], s["relation"]) for s in body["included"]["related"]["siblings"]] == [
        (car[1], "contradicts")
    ]
    engine = running.daemon.state.engine
    assert engine is not None
    counted = await read_rows(
        engine.store, "SELECT connections FROM memories WHERE id IN (?, ?)", list(car)
    )
    assert [r[0] for r in counted] == [1, 1]  # its one source each


async def test_keep_one_forgets_the_other_and_restore_reopens_the_pair(running: Running) -> None:
    newer, older = await contradiction(running, CAR)
    status, done = await resolve(running, newer, older, older)
    assert status == 200, done
    assert (done["keep"], done["changed"]) == (older, True)
    assert done["subjectId"] == pair_subject(newer, older)
    assert done["contradicts"]["isForgotten"] is False
    assert done["memory"]["isForgotten"] is True
    assert done["memory"]["forgetReason"] == f"contradicted by {older}"
    assert pairs(await review(running)) == []
    status, found, _ = await call(
        running.unix, "POST", f"{base()}/search",
        json={"query": "colour of Sam's car", "searchMode": "memories", "threshold": 0},
    )  # fmt: skip
    assert [r["id"] for r in found["results"]] == [older]  # out of recall at once

    # The same word again changes nothing; another is a conflict that says why.
    status, again = await resolve(running, older, newer, older)
    assert status == 200 and again["changed"] is False
    assert again["resolvedAt"] == done["resolvedAt"]
    for keep in (newer, "both"):
        status, body = await resolve(running, newer, older, keep)
        assert_error(status, body, 409)
        assert f"keep '{older}'" in body["details"] and "restore" in body["details"]

    # Restoring the forgotten one reopens the pair, with its last label; a new word applies.
    status, _, _ = await call(running.unix, "POST", f"{base()}/memories/{newer}/restore")
    assert status == 200
    listed = await review(running)
    assert pairs(listed) == [(newer, older)] and listed["contradictions"][0]["label"] == older
    status, done = await resolve(running, newer, older, newer)
    assert status == 200 and done["changed"] is True
    assert (await memory(running, older))["forgetReason"] == f"contradicted by {newer}"
    assert (await memory(running, newer))["isForgotten"] is False


async def test_keep_both_leaves_both_and_takes_the_pair_off_the_list(running: Running) -> None:
    car = await contradiction(running, CAR)
    tea = await contradiction(running, TEA)
    status, done = await resolve(running, *car, "both")
    assert status == 200 and (done["keep"], done["changed"]) == ("both", True)
    for side in ("memory", "contradicts"):
        assert done[side]["isLatest"] is True and done[side]["isForgotten"] is False
    assert pairs(await review(running)) == [tea]
    status, again = await resolve(running, car[1], car[0], "both")
    assert status == 200 and again["changed"] is False
    # While both stand, a person may still change their mind.
    status, done = await resolve(running, *car, car[0])
    assert status == 200 and done["changed"] is True
    assert done["contradicts"]["forgetReason"] == f"contradicted by {car[0]}"
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.read() as reader:
        label = await reader.label("contradiction", pair_subject(*car))
    assert label is not None and label.value == car[0]  # the latest word stands


async def test_a_memory_that_no_longer_stands_takes_the_pair_off(running: Running) -> None:
    car = await contradiction(running, CAR)
    tea = await contradiction(running, TEA)
    pets = await contradiction(running, PETS)
    assert len(pairs(await review(running))) == 3

    status, _, _ = await call(running.unix, "DELETE", f"{base()}/memories", json={"ids": [car[1]]})
    assert status == 200
    status, _, _ = await call(
        running.unix, "PATCH", f"{base()}/memories/{tea[0]}",
        json={"memory": "Alex drinks black tea every morning."},
    )  # fmt: skip
    assert status == 200
    assert pairs(await review(running)) == [pets]
    status, body = await resolve(running, *tea, "both")
    assert_error(status, body, 409)
    assert body["details"] == f"{tea[0]} is no longer the latest version"

    # A hard delete takes the pair's label with its memory.
    status, _ = await resolve(running, *pets, "both")
    assert status == 200
    doc = (await memory(running, pets[0]))["documentId"]
    status, _, _ = await call(running.unix, "DELETE", f"{base()}/document", json={"ids": [doc]})
    assert status == 200
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.read() as reader:
        assert await reader.label("contradiction", pair_subject(*pets)) is None


async def test_bad_input_is_a_clear_4xx(running: Running) -> None:
    newer, older = await contradiction(running, CAR)
    lone = await remember(running, NS, "Priya plays the violin.")
    elsewhere = await remember(running, "elsewhere", "Leo reads poetry.")
    for body, expected, words in (
        ({"memoryId": "mem_nope", "contradicts": older, "keep": older}, 404, "mem_nope"),
        ({"memoryId": newer, "contradicts": elsewhere, "keep": "both"}, 404, elsewhere),
        ({"memoryId": newer, "contradicts": lone, "keep": "both"}, 404, "no contradicts relation"),
        ({"memoryId": newer, "contradicts": newer, "keep": "both"}, 400, "$.contradicts"),
        ({"memoryId": newer, "contradicts": older, "keep": lone}, 400, "$.keep"),
        ({"memoryId": newer, "contradicts": older, "keep": "neither"}, 400, "$.keep"),
        ({"memoryId": newer, "contradicts": older}, 400, "keep"),
        ({"memoryId": newer, "contradicts": older, "keep": ""}, 400, "$.keep"),
        ({"memoryId": newer, "contradicts": older, "keep": "both", "x": 1}, 400, "x"),
    ):
        status, reply, _ = await call(running.unix, "POST", f"{base()}/review", json=body)
        assert_error(status, reply, expected)
        assert words in reply["details"], (body, reply)
    status, reply, _ = await call(running.unix, "GET", f"{base()}/review?limit=0")
    assert_error(status, reply, 400)
    assert pairs(await review(running)) == [(newer, older)]  # nothing was written
    assert (await memory(running, newer))["isForgotten"] is False


@pytest.fixture
async def scoped(start_daemon: StartDaemon, short_dir: Path) -> Running:
    tokens = (
        'token = "unscoped-secret-01"\n'
        + token_table("a", "only-a-secret-0001", "write", ["a"])
        + token_table("a-reader", "a-reader-secret-01", "read", ["a"])
    )
    return await start_daemon(config_with_tokens(short_dir, tokens))


async def test_a_token_sees_and_resolves_only_its_namespaces(scoped: Running) -> None:
    mine = await contradiction(scoped, CAR, ns="a")
    theirs = await contradiction(scoped, TEA, ns="b")

    async def tcp(method: str, path: str, secret: str, **kwargs: Any) -> tuple[int, Any]:
        status, body, _ = await call(
            scoped.tcp, method, scoped.url(path),
            headers={"Authorization": f"Bearer {secret}"}, **kwargs,
        )  # fmt: skip
        return status, body

    status, body = await tcp("GET", "/v1/review", "only-a-secret-0001")
    assert status == 200 and pairs(body) == [mine] and body["pagination"]["totalItems"] == 1
    assert body["contradictions"][0]["namespace"] == "a"
    status, body = await tcp("GET", "/v1/review", "unscoped-secret-01")
    assert status == 200 and pairs(body) == [theirs, mine]
    status, body = await tcp("GET", "/ns/b/review", "only-a-secret-0001")
    assert_error(status, body, 403)
    resolution = {"memoryId": theirs[0], "contradicts": theirs[1], "keep": "both"}
    status, body = await tcp("POST", "/ns/b/review", "only-a-secret-0001", json=resolution)
    assert_error(status, body, 403)
    # b's ids under a's namespace are as unknown as any.
    status, body = await tcp("POST", "/ns/a/review", "only-a-secret-0001", json=resolution)
    assert_error(status, body, 404)
    resolution = {"memoryId": mine[0], "contradicts": mine[1], "keep": "both"}
    status, body = await tcp("POST", "/ns/a/review", "a-reader-secret-01", json=resolution)
    assert_error(status, body, 403)  # resolving is a write
    status, body = await tcp("POST", "/ns/a/review", "only-a-secret-0001", json=resolution)
    assert status == 200 and body["changed"] is True
    status, body = await tcp("GET", "/v1/review", "unscoped-secret-01")
    assert pairs(body) == [theirs]


async def test_smemctl_lists_and_resolves(
    running: Running, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    car = await contradiction(running, CAR)
    tea = await contradiction(running, TEA, ns="other")
    socket = str(running.daemon.config.socket)

    async def run(*args: str) -> tuple[int, str, str]:
        code = await asyncio.to_thread(smemctl, ["--socket", socket, *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    code, out, _ = await run("review")
    assert code == 0
    blocks = out.split("\n\n")
    assert blocks[0].startswith("other: found ") and ", score 0.90" in blocks[0]
    assert blocks[1].startswith(f"{NS}: found ")
    lines = blocks[1].splitlines()
    assert lines[1].split() == ["id", "created", "event", "text"]
    assert lines[2].split()[0] == car[0] and lines[2].endswith(CAR[1])
    assert lines[3].split()[0] == car[1] and lines[3].endswith(CAR[0])
    assert "page 1 of 1, 2 contradictions" in blocks[2]
    assert "smemctl review resolve ID OTHER_ID --keep ID|both" in blocks[2]

    code, out, _ = await run("review", "-n", "other")
    assert code == 0 and tea[0] in out and car[0] not in out
    code, out, _ = await run("--json", "review", "--namespace", NS)
    assert code == 0 and pairs(json.loads(out)) == [car]

    code, out, _ = await run("review", "resolve", car[0], car[1], "--keep", car[1], "-n", NS)
    assert (code, out) == (0, f"kept {car[1]}; forgot {car[0]} (restore {car[0]} undoes it)\n")
    code, out, _ = await run("review", "-n", NS, "resolve", car[0], car[1], "--keep", car[1])
    assert code == 0 and out.startswith("already resolved (") and "nothing changed" in out
    code, out, err = await run("review", "resolve", car[0], car[1], "--keep", "both", "-n", NS)
    assert (code, out) == (1, "")
    assert err.startswith("error 409: contradiction not open: resolved as keep") and car[0] in err
    code, out, _ = await run("review", "resolve", tea[0], tea[1], "--keep", "both", "-n", "other")
    assert (code, out) == (0, f"kept both {tea[0]} and {tea[1]}\n")
    code, out, _ = await run("review")
    assert out == "page 1 of 1, 0 contradictions\n"
    code, _, err = await run("review", "resolve", car[0], "--keep", "both")
    assert code == 2 and "OTHER_ID" in err
