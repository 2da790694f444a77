"""Re-deriving a namespace from its documents through the real daemon: the shadow is built by
the worker as any add, the diff names what would change (a hand edit the documents do not say
is gone; a label is listed as not carried over), apply swaps it in, discard drops it."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from smemd.engine import rederive
from tests.conftest import Running, StartDaemon, config_with_tokens, token_table
from tests.fakes.llama_server import FakeLlamaServer, Reply
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
    status, gone, _ = await call(running.unix, "GET", REDERIVE)
    assert status == 200 and gone["state"] == "none", gone
    for method, path in (("POST", f"{REDERIVE}/apply"), ("DELETE", REDERIVE)):
        assert_error(*(await call(running.unix, method, path))[:2], 404)


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
    status, none, _ = await call(running.unix, "GET", "http://smemd/ns/nowhere/rederive")
    assert status == 200 and none["state"] == "none", none
    assert_error(*(await call(running.unix, "POST", "http://smemd/ns/nowhere/rederive"))[:2], 404)


def model_reads(body: Mapping[str, Any]) -> str | Reply:
    """A chat model that reads each document as one fact of its own wording."""
    prompt = body["messages"][-1]["content"]
    if "json_schema" in body:
        said = next(
            (s for s in ("Seattle", "Portland", "tea") if s in prompt.split("<document")[-1]), ""
        )
        fact: dict[str, Any] = {
            "text": f"The model read: {said}",
            "type": "fact",
            "eventDate": None,
            "entities": [],
        }
        return json.dumps([fact] if said else [])
    # The judge, should two facts meet: each is about something else.
    letter = re.search(r"^([A-Z])\. [^\n]*(something else)", prompt, re.MULTILINE)
    return Reply(probs={letter.group(1) if letter else "A": 0.9})


async def test_a_rederivation_read_by_a_model_it_names(running: Running) -> None:
    await add(running, "Alex lives in Seattle.", id="a")
    await settle(running)
    await add(running, "Alex moved to Portland.", id="b")
    await settle(running)
    before = await texts(running)
    async with FakeLlamaServer(roles=(), chat=model_reads) as model:
        body = {"llamaUrl": model.url + "/"}
        status, started, _ = await call(running.unix, "POST", REDERIVE, json=body)
        assert status == 200, started
        assert started["model"] == model.url  # as given, without its trailing slash
        diff = await ready(running)
        assert diff["model"] == model.url
        assert set(diff["examples"]["added"]) == {
            "The model read: Seattle", "The model read: Portland"
        }  # fmt: skip
        assert set(diff["examples"]["gone"]) == before
        assert model.calls["chat"] >= 2
        status, applied, _ = await call(running.unix, "POST", f"{REDERIVE}/apply")
        assert status == 200, applied
    assert {"The model read: Seattle", "The model read: Portland"} >= await texts(running)
    # What the namespace takes in now is read by the daemon's own rules again.
    await add(running, "Jo drinks green tea every morning.", id="t")
    await settle(running)
    assert "Jo drinks green tea every morning." in await texts(running)


async def test_a_model_that_does_not_answer_or_is_not_an_admin_s_is_refused(
    start_daemon: StartDaemon, short_dir: Path
) -> None:
    guarded = await start_daemon(
        config_with_tokens(short_dir, token_table("writer", "rederive-writer-secret-1", "write"))
    )
    await add(guarded, "Alex lives in Seattle.", id="a")
    await settle(guarded)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"
    for url, named in ((nowhere, "model not reached"), ("ftp://127.0.0.1:1", "$.llamaUrl")):
        status, body, _ = await call(guarded.unix, "POST", REDERIVE, json={"llamaUrl": url})
        assert_error(status, body, 400)
        assert named in body["error"] + body["details"], body
    status, none, _ = await call(guarded.unix, "GET", REDERIVE)
    assert status == 200 and none["state"] == "none"  # nothing was begun
    async with FakeLlamaServer(roles=(), chat=model_reads) as model:
        headers = {"Authorization": "Bearer rederive-writer-secret-1"}
        async with guarded.tcp.post(
            guarded.url("/ns/people/rederive"), json={"llamaUrl": model.url}, headers=headers
        ) as response:
            assert_error(response.status, await response.json(), 403)
        async with guarded.tcp.post(
            guarded.url("/ns/people/rederive"), headers=headers
        ) as response:  # without a model of its own: a writer's to start
            assert response.status == 200
        assert model.calls["chat"] == 0


async def test_a_rederivation_copies_in_date_order_and_batches_leaving_out_the_retracted(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rederive, "COPY_BATCH", 2)  # five documents make three commits
    days = {"d0": "2024-03-05", "d1": "2024-03-01", "d2": "2024-03-04", "d3": "2024-03-02",
            "d4": "2024-03-03"}  # fmt: skip
    for caller_id, day in days.items():
        await add(running, f"Note {caller_id}: the kite is {day}.", id=caller_id, date=day)
    await settle(running)
    status, body, _ = await call(running.unix, "POST", f"{NS}/document/d4/retract")
    assert status == 200, body
    status, started, _ = await call(running.unix, "POST", REDERIVE)
    assert status == 200 and started["documents"] == 4, started
    await ready(running)
    status, listed, _ = await call(
        running.unix, "POST",
        "http://smemd/ns/people:rederive/list/documents?limit=100&sort=createdAt&order=asc",
        json={},
    )  # fmt: skip
    assert status == 200, listed
    # In the order they were stored: by date, across the commits (d1 d3 | d2 | d0).
    assert [d["customId"] for d in listed["documents"]] == ["d1", "d3", "d2", "d0"]
