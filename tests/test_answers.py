"""`POST /v1/compress` and `POST /v1/ask` on the real daemon: the builtin fleet (no model) and a hosts
fleet whose llm node is a fake llama-server; and smemctl's `ask` and `compress` against them."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from smemctl.cli import main
from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.settling import until_idle
from tests.test_api import assert_error, call

V1 = "http://smemd/v1"
FACTS = {
    "alex": "# Moving notes\n\nAlex lives in Seattle.",
    "kim": "# Hobbies\n\nKim plays the cello on Sundays.",
}


async def remember(running: Running, ns: str = "default") -> dict[str, str]:
    """Add the documents, wait for their memories, and return their ids by caller id."""
    ids = {}
    for name, content in FACTS.items():
        status, body, _ = await call(
            running.unix, "POST", f"http://smemd/ns/{ns}/document",
            json={"content": content, "id": name, "date": "2025-03-14"},
        )  # fmt: skip
        assert status == 200, body
        ids[name] = body["id"]
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    return ids


async def post(running: Running, route: str, **body: Any) -> tuple[int, Any]:
    status, reply, _ = await call(running.unix, "POST", f"{V1}/{route}", json=body)
    return status, reply


def numbered(context: str) -> list[int]:
    return [int(n) for n in re.findall(r"^\[(\d+)\] ", context, re.MULTILINE)]


async def test_compress_numbers_the_evidence_and_counts_its_tokens(running: Running) -> None:
    ids = await remember(running)
    status, body = await post(running, "compress", q="Where does Alex live?", threshold=0)
    assert status == 200, body
    context, items = body["context"], body["items"]
    assert re.match(r'^<evidence id="[0-9a-f]{16}">\n', context)
    assert numbered(context) == [item["n"] for item in items] == list(range(1, len(items) + 1))
    assert body["tokens"] == math.ceil(len(context) / 4)
    first = items[0]
    assert (first["kind"], first["text"], first["documentId"]) == (
        "memory", "Alex lives in Seattle.", ids["alex"],
    )  # fmt: skip
    assert (first["title"], first["date"]) == ("Moving notes", "2025-03-14")
    assert "[1] (2025-03-14; Moving notes) Alex lives in Seattle.\n" in context
    assert any("Kim plays the cello" in item["text"] for item in items)

    status, small = await post(
        running, "compress", q="Where does Alex live?", threshold=0, maxTokens=body["tokens"] - 1
    )
    assert status == 200, small
    assert 0 < len(small["items"]) < len(items) and small["tokens"] <= body["tokens"] - 1

    status, elsewhere = await post(running, "compress", q="Where does Alex live?", namespace="x")
    assert status == 200 and elsewhere["items"] == [] and numbered(elsewhere["context"]) == []


async def test_ask_without_a_model_returns_the_sources_and_a_note(running: Running) -> None:
    await remember(running)
    status, body = await post(running, "ask", q="Where does Alex live?", threshold=0, limit=5)
    assert status == 200, body
    assert body["answer"] is None and body["answeredBy"] is None and body["citations"] == []
    assert "llm role" in body["note"]
    assert [s["n"] for s in body["sources"]] == numbered(body["context"])
    assert body["sources"][0]["text"] == "Alex lives in Seattle."
    assert body["tokens"] == math.ceil(len(body["context"]) / 4)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"q": "x", "bogus": 1}, "$.bogus"),
        ({"q": ""}, "$.q"),
        ({"q": "   "}, "$.q"),
        ({}, "q"),
        ({"q": "x", "namespace": "no spaces"}, "$.namespace"),
        ({"q": "x", "limit": 0}, "$.limit"),
        ({"q": "x", "maxTokens": 0}, "$.maxTokens"),
        ({"q": "x", "asOf": "yesterday"}, "$.asOf"),
        ({"q": "x", "filter": {"AND": [{"nope": 1}]}}, "$.filter"),
    ],
)
async def test_bad_input_is_a_400_naming_the_field(
    running: Running, body: dict[str, Any], field: str
) -> None:
    for route in ("compress", "ask"):
        status, reply = await post(running, route, **body)
        assert_error(status, reply, 400)
        assert field in reply["details"], reply


def smemctl(socket: Path, *args: str) -> int:
    return main(["--socket", str(socket), *args])


async def test_smemctl_ask_and_compress(
    running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    await remember(running)
    socket = running.daemon.config.socket
    # smemctl is synchronous: in a thread, so the daemon on this loop can answer it.
    assert await asyncio.to_thread(smemctl, socket, "compress", "Where does Alex live?") == 0
    out = capsys.readouterr().out
    assert out.startswith("<evidence id=") and "Alex lives in Seattle." in out
    assert re.search(r"^\d+ tokens, \d+ items?$", out, re.MULTILINE)

    assert await asyncio.to_thread(smemctl, socket, "ask", "Where does Alex live?") == 0
    out = capsys.readouterr().out
    assert out.startswith("no answer: no model serves the llm role")
    assert re.search(
        r"^\[1\] \(2025-03-14; Moving notes\) Alex lives in Seattle\.  \(memory ", out, re.M
    )

    code = await asyncio.to_thread(smemctl, socket, "--json", "ask", "Alex?", "-n", "nobody")
    assert code == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["sources"] == [] and reply["answer"] is None

    assert await asyncio.to_thread(smemctl, socket, "compress", "x", "-n", "no spaces") == 1
    assert "$.namespace" in capsys.readouterr().err


# --- with a model: a hosts fleet whose llm node is a fake llama-server -------------------------

ANSWER = "Alex lives in Seattle [1], not on Mars [99]."
SENTENCES = ("Alex lives in Seattle.", "Kim plays the cello on Sundays.")


def model(body: Mapping[str, Any]) -> str:
    """The fake model: the answer to a question, and each document's sentence when extracting."""
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if "Question: " in prompt:
        return ANSWER
    if "json_schema" in body:  # extraction (the daemon reads documents by LLM when it has one)
        facts = [{"text": s, "type": "fact", "eventDate": None} for s in SENTENCES if s in prompt]
        return json.dumps(facts)
    return "OK"


@pytest.fixture
async def fakes() -> AsyncIterator[dict[str, FakeLlamaServer]]:
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2", chat=model),
    }
    async with started(servers):
        yield servers


@pytest.fixture
async def with_llm(
    short_dir: Path, start_daemon: StartDaemon, fakes: dict[str, FakeLlamaServer]
) -> Running:
    return await start_hosts(
        start_daemon,
        short_dir,
        [
            ("node0", fakes["node0"], ["interactive", "background"], "embed"),
            ("node1", fakes["node1"], ["interactive"], "llm"),
        ],
    )


async def test_ask_answers_with_the_model_and_keeps_only_citations_that_exist(
    with_llm: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    ids = await remember(with_llm)
    status, body = await post(with_llm, "ask", q="Where does Alex live?", threshold=0)
    assert status == 200, body
    assert body["answer"] == ANSWER and body["citations"] == [1]
    assert body["answeredBy"] == "fake.gguf" and body["note"] is None
    [source] = body["sources"]
    assert (source["n"], source["kind"], source["documentId"], source["text"]) == (
        1, "memory", ids["alex"], "Alex lives in Seattle.",
    )  # fmt: skip
    assert source["date"] == "2025-03-14" and source["title"] == "Moving notes"
    assert "[1] (2025-03-14; Moving notes) Alex lives in Seattle.\n" in body["context"]

    sent = fakes["node1"].last["chat"]
    assert sent["max_tokens"] == 512
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    system, user = (m["content"] for m in sent["messages"])
    nonce = re.search(r'<evidence id="([0-9a-f]+)">', body["context"])
    assert nonce is not None and nonce[1] in system
    assert user == f"{body['context']}\n\nQuestion: Where does Alex live?"
    assert fakes["node0"].calls["chat"] == 0  # the embedding node is not asked


async def test_a_failing_model_is_a_503_naming_the_node(
    with_llm: Running, fakes: dict[str, FakeLlamaServer]
) -> None:
    await remember(with_llm)
    fakes["node1"].fail_next(10, 500, message="model crashed", routes=("chat",))
    status, body = await post(with_llm, "ask", q="Where does Alex live?")
    assert_error(status, body, 503)
    assert "node1" in body["error"] and "model crashed" in body["details"]
    # compress needs no model, so it still answers.
    status, body = await post(with_llm, "compress", q="Where does Alex live?", threshold=0)
    assert status == 200 and body["items"]
