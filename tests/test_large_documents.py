"""One large document shares the model: searches in other namespaces go ahead of its batches,
a search's embedding keeps to the request's deadline, and a document past `[ingest] max-chunks`
is refused when added, or its job fails once a fetch shows its size."""

from __future__ import annotations

import asyncio
import io
import json
import random
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer
from tests.fakes.web_pages import PageServer
from tests.pace import scaled
from tests.settling import until_idle
from tests.test_api import assert_error, call

WORDS = "the of river morning lantern quietly harbour seven glass north orchard letter".split()


def prose(paragraphs: int, seed: int = 3) -> str:
    """Paragraphs of about 900 characters: a chunk holds one and a half."""
    rng = random.Random(seed)
    return "\n\n".join(
        " ".join(rng.choices(WORDS, k=150)).capitalize() + "." for _ in range(paragraphs)
    )


async def add(running: Running, ns: str, content: str, **fields: Any) -> tuple[int, Any]:
    body = io.BytesIO(json.dumps({"content": content, **fields}).encode())
    status, reply, _ = await call(
        running.unix, "POST", f"http://smemd/ns/{ns}/document", data=body,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    return status, reply


async def document(running: Running, ns: str, ref: str) -> Any:
    status, body, _ = await call(running.unix, "GET", f"http://smemd/ns/{ns}/document/{ref}")
    assert status == 200, body
    return body


async def status_of(running: Running, ns: str, ref: str) -> str:
    return str((await document(running, ns, ref))["system"]["status"])


async def test_searches_elsewhere_stay_quick_while_a_large_document_embeds(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(engine__dreaming=False)
    status, body = await add(running, "small", "Alex keeps bees behind the old mill.")
    assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await engine.wait_idle()
    status, big = await add(running, "big", prose(2_000), id="big")  # about 1,300 chunks
    assert status == 200, big
    while await status_of(running, "big", "big") != "embedding":
        await asyncio.sleep(0.05)
    took = []
    for _ in range(20):
        started = time.monotonic()
        status, found, _ = await call(
            running.tcp, "POST", running.url("/ns/small/search"), json={"query": "who keeps bees?"}
        )
        took.append(time.monotonic() - started)
        assert status == 200 and found["results"], found
    # One lock held across the whole document made each of these wait for all of its batches.
    assert statistics.median(took) < scaled(0.5) and max(took) < scaled(2.0), took
    assert await status_of(running, "big", "big") == "embedding"  # they ran beside it


async def test_a_document_past_max_chunks_is_413_and_writes_nothing(
    start_daemon: StartDaemon,
) -> None:
    running = await start_daemon(ingest__max_chunks=20)
    for path, body in (
        ("/ns/big/document", {"content": prose(40)}),
        ("/v3/documents", {"content": prose(40), "containerTag": "big"}),
        ("/ns/big/document/batch", {"documents": [{"content": "Fine."}, {"content": prose(40)}]}),
    ):
        status, reply, _ = await call(running.unix, "POST", "http://smemd" + path, json=body)
        if path.endswith("batch"):
            assert status == 200, reply  # a batch answers per document
            assert reply["results"][0].get("status") == "queued", reply
            assert "max-chunks (20)" in str(reply["results"][1]), reply
            continue
        assert_error(status, reply, 413)
        assert "max-chunks (20)" in reply["details"], reply
    status, listed, _ = await call(
        running.unix, "POST", "http://smemd/ns/big/list/documents", json={}
    )
    assert status == 200 and listed["pagination"]["totalItems"] == 1  # the batch's small one
    # A revision is held to the same bound; a document just under it goes in.
    status, body = await add(running, "big", prose(2), id="grows")
    assert status == 200, body
    status, reply, _ = await call(
        running.unix, "PATCH", "http://smemd/ns/big/document/grows", json={"content": prose(40)}
    )
    assert_error(status, reply, 413)


async def test_a_fetched_page_past_max_chunks_fails_its_job_saying_so(
    start_daemon: StartDaemon,
) -> None:
    async with PageServer() as pages:
        running = await start_daemon(
            ingest__allow_hosts=[f"127.0.0.1:{pages.port}"], ingest__max_chunks=20
        )
        status, body = await add(running, "web", pages.url("/sized/100000"), id="page")
        assert status == 200, body
        engine = running.daemon.state.engine
        assert engine is not None
        await until_idle(engine)
    doc = await document(running, "web", "page")
    assert doc["system"]["status"] == "failed", doc
    status, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs")
    job = jobs["jobs"][0]
    assert (
        job["error"].startswith("chunking: document too large")
        and "max-chunks (20)" in job["error"]
    )
    assert jobs["counts"].get("failed") == 1 and job["attempts"] == 1, jobs  # not retried


@pytest.fixture
async def slow_embedder() -> AsyncIterator[FakeLlamaServer]:
    async with started({"node0": FakeLlamaServer(host="127.0.31.7")}) as servers:
        yield servers["node0"]


async def test_a_search_whose_embedding_is_late_answers_503_timed_out(
    short_dir: Path, start_daemon: StartDaemon, slow_embedder: FakeLlamaServer
) -> None:
    running = await start_hosts(
        start_daemon, short_dir, [("node0", slow_embedder, ["interactive"], "embed")],
        extra="request-timeout-s = 0.5",
    )  # fmt: skip
    slow_embedder.hang()
    try:
        started = time.monotonic()
        status, reply, response = await call(
            running.tcp, "POST", running.url("/ns/late/search"), json={"query": "anything"}
        )
        assert_error(status, reply, 503)
        assert "request-timeout-s" in reply["details"] and response.headers["Retry-After"] == "1"
        assert time.monotonic() - started < scaled(2.0)
    finally:
        slow_embedder.release()


async def test_a_chat_log_of_more_messages_than_max_chunks_is_413(
    start_daemon: StartDaemon,
) -> None:
    """A chat log is a chunk a message (smemd.engine.ingest.chat_logs): it is counted so when it
    is added, not refused later by its job; one of fewer messages goes in."""
    running = await start_daemon(ingest__max_chunks=20)
    log = [
        {"role": "user" if i % 2 else "assistant", "content": f"Message {i}."} for i in range(30)
    ]
    text = json.dumps(log)  # 600 characters: 3 chunks as text, 30 as turns
    status, reply, _ = await call(
        running.unix, "POST", "http://smemd/ns/logs/document", json={"content": text}
    )
    assert_error(status, reply, 413)
    assert "30 chunks" in reply["details"], reply
    status, reply = await add(running, "logs", json.dumps(log[:20]))
    assert status == 200, reply
