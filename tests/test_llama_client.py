"""LlamaClient against the fake llama-server, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import math
import socket
import time
from collections.abc import AsyncIterator

import aiohttp
import numpy as np
import pytest

from smemd.fleet.builtin import HashedEmbedder
from smemd.fleet.llama import (
    Health,
    LlamaBadRequest,
    LlamaClient,
    LlamaContextOverflow,
    LlamaEmptyAnswer,
    LlamaError,
    LlamaServerError,
    LlamaTimeout,
    LlamaUnavailable,
)
from tests.fakes.llama_server import FakeLlamaServer, Reply, Rules
from tests.pace import scaled

ABC = 'root ::= "A" | "B" | "C"'
RULES: Rules = [
    (r"capital of France", "Paris"),
    (r"Which option", Reply(probs={"D": 0.5, "B": 0.3, "A": 0.15, "C": 0.05})),
    (r"essay", "one two three four five six seven eight"),
]
DOCS = ["The recipe needs two eggs", "Alex lives in Seattle", "Node three runs hot"]
USER = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def fake() -> AsyncIterator[FakeLlamaServer]:
    async with FakeLlamaServer(host="127.0.31.1", chat=RULES) as fake:
        yield fake


@pytest.fixture
def client(session: aiohttp.ClientSession, fake: FakeLlamaServer) -> LlamaClient:
    return LlamaClient(session, fake.url, node="node0", timeout=5.0)


async def test_health_loading_then_ready(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(loading_for=math.inf) as fake:
        client = LlamaClient(session, fake.url, node="node0")
        assert await client.health() == Health("loading")
        with pytest.raises(
            LlamaUnavailable, match=r"node node0: POST /v1/embeddings: 503 .*Loading model"
        ):
            await client.embed(["x"])
        fake.ready()
        health = await client.health()
        assert health.is_ready and health.status == "ok"
    async with FakeLlamaServer(loading_for=0.2) as fake:
        client = LlamaClient(session, fake.url, node="node0")
        assert not (await client.health()).is_ready
        await asyncio.sleep(0.3)
        assert (await client.health()).is_ready


async def test_refused_port_is_unavailable(session: aiohttp.ClientSession) -> None:
    with socket.socket() as sock:  # a port just freed and not listened on
        sock.bind(("127.0.31.9", 0))
        port = sock.getsockname()[1]
    client = LlamaClient(session, f"http://127.0.31.9:{port}", node="node5")
    with pytest.raises(
        LlamaUnavailable, match=r"node node5: GET /health: http://127.0.31.9"
    ) as caught:
        await client.health()
    assert isinstance(caught.value.__cause__, aiohttp.ClientConnectionError)
    assert caught.value.retryable and caught.value.status == 503


async def test_props(client: LlamaClient, fake: FakeLlamaServer) -> None:
    props = await client.props()
    assert (props.total_slots, props.n_ctx, props.model) == (1, 4096, "fake.gguf")
    assert client.name == "fake.gguf"


async def test_embed_matches_the_embedder_in_input_order(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(scramble=True) as fake:  # the reply lists them backwards
        client = LlamaClient(session, fake.url, node="node0")
        vectors = await client.embed(DOCS)
        fake.scramble = False
        assert fake.last["embeddings"] == {"input": DOCS}
    expected = await HashedEmbedder().embed(DOCS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert client.dimension == 384 and client.name == "fake.gguf"
    assert (await client.embed([])).shape == (0, 384)
    with pytest.raises(TypeError):
        await client.embed("one text")


async def test_rerank_scores_in_document_order(client: LlamaClient, fake: FakeLlamaServer) -> None:
    scores = await client.rerank("Where does Alex live?", DOCS)
    vectors = await HashedEmbedder().embed(["Where does Alex live?", *DOCS])
    np.testing.assert_allclose(scores, vectors[1:] @ vectors[0], atol=1e-5)
    assert max(range(3), key=scores.__getitem__) == 1
    assert await client.rerank("q", []) == [] and fake.calls["rerank"] == 1


async def test_chat_sends_no_thinking_by_default(
    client: LlamaClient, fake: FakeLlamaServer
) -> None:
    chat = await client.chat(USER, max_tokens=16)
    assert (chat.content, chat.finish_reason, chat.logprobs) == ("Paris", "stop", [])
    sent = fake.last["chat"]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert (sent["max_tokens"], sent["temperature"]) == (16, 0.0)
    assert "logprobs" not in sent and "grammar" not in sent


async def test_grammar_alternatives_and_logprobs(client: LlamaClient) -> None:
    question = [{"role": "user", "content": "Which option: A, B or C?"}]
    chat = await client.chat(question, grammar=ABC, max_tokens=1, top_logprobs=3)
    assert chat.content == "B"  # "D" is likelier, but the grammar forbids it
    assert chat.finish_reason == "length"  # the end token did not fit either, as for real
    (token,) = chat.logprobs
    assert token.token == "B" and token.logprob == pytest.approx(math.log(0.3))
    assert [t.token for t in token.top_logprobs] == ["D", "B", "A"]
    assert chat.top_probs() == pytest.approx({"D": 0.5, "B": 0.3, "A": 0.15})
    assert chat.top_probs(5) == {}
    chat = await client.chat(question, grammar=ABC, max_tokens=2, logprobs=True)
    assert chat.finish_reason == "stop" and [t.token for t in chat.logprobs] == ["B", ""]
    assert len(chat.logprobs[0].top_logprobs) == 4  # all the rule gave; the default asks 20


async def test_truncated_answer_is_returned(client: LlamaClient) -> None:
    chat = await client.chat([{"role": "user", "content": "an essay"}], max_tokens=3)
    assert (chat.content, chat.finish_reason) == ("one two three", "length")


async def test_reasoning_model(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(chat=RULES, thinks=50) as fake:
        client = LlamaClient(session, fake.url, node="node2")
        assert (await client.chat(USER, max_tokens=8)).content == "Paris"
        with pytest.raises(LlamaEmptyAnswer, match="node node2: POST /v1/chat/completions"):
            await client.chat(USER, max_tokens=8, chat_template_kwargs={"enable_thinking": True})


async def test_bad_requests(client: LlamaClient) -> None:
    with pytest.raises(
        LlamaBadRequest, match=r"invalid_request_error: .*failed to parse grammar"
    ) as caught:
        await client.chat(USER, grammar='root ::= "A | "B"', max_tokens=1)
    assert not caught.value.retryable
    with pytest.raises(LlamaBadRequest, match="enable_thinking"):
        await client.chat(USER, max_tokens=1, chat_template_kwargs={"enable_thinking": "no"})
    with pytest.raises(ValueError, match="not both"):
        await client.chat(USER, grammar=ABC, json_schema={"type": "string"}, max_tokens=1)


async def test_context_overflow_carries_its_numbers(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(n_ctx=64) as fake:
        client = LlamaClient(session, fake.url, node="node1")
        long = [{"role": "user", "content": "word " * 100}]
        with pytest.raises(LlamaContextOverflow, match=r"request \(104 tokens\) exceeds") as caught:
            await client.chat(long, max_tokens=4)
    assert (caught.value.n_prompt_tokens, caught.value.n_ctx) == (104, 64)
    assert isinstance(caught.value, LlamaBadRequest) and caught.value.status == 413
    async with FakeLlamaServer(n_batch=64) as fake:  # embeddings: a 500 past the batch
        client = LlamaClient(session, fake.url, node="node1")
        with pytest.raises(LlamaContextOverflow, match="500 server_error: input") as caught:
            await client.embed(["short", "word " * 100])
    assert (caught.value.n_prompt_tokens, caught.value.n_ctx) == (101, 64)
    assert not caught.value.retryable


async def test_server_errors(client: LlamaClient, fake: FakeLlamaServer) -> None:
    fake.fail_next(2, 500, message="boom")
    for _ in range(2):
        with pytest.raises(
            LlamaServerError, match="node node0: POST /v1/rerank: 500 server_error: boom"
        ):
            await client.rerank("q", DOCS)
    assert len(await client.rerank("q", DOCS)) == 3  # the fault is spent
    fake.fail_next(1, 503, message="no slot available")
    with pytest.raises(LlamaUnavailable, match="no slot"):
        await client.embed(["x"])
    fake.fail_next(1, 502, body=b"<html>Bad Gateway</html>")
    with pytest.raises(LlamaServerError, match="502: <html>Bad Gateway"):
        await client.embed(["x"])


@pytest.mark.parametrize(
    "body", [b'{"choices": [{"message"', b"[1, 2]", b'{"choices": [{"message": {"content": 7}}]}']
)
async def test_malformed_reply(client: LlamaClient, fake: FakeLlamaServer, body: bytes) -> None:
    fake.fail_next(1, 200, body=body)
    with pytest.raises(
        LlamaServerError, match="node node0: POST /v1/chat/completions: malformed reply"
    ):
        await client.chat(USER, max_tokens=4)


async def test_missing_role(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(roles=()) as fake:
        client = LlamaClient(session, fake.url, node="node0")
        with pytest.raises(LlamaServerError, match=r"501 not_supported_error: .*--embeddings"):
            await client.embed(["x"])
        with pytest.raises(LlamaServerError, match=r"501 not_supported_error: .*--reranking"):
            await client.rerank("q", ["x"])
    async with FakeLlamaServer(roles={"rerank"}) as fake:  # a reranker embeds zeros, with a 200
        client = LlamaClient(session, fake.url, node="node0")
        with pytest.raises(LlamaServerError, match="not unit vectors"):
            await client.embed(["x"])


async def test_hang_times_out_then_kill_drops_the_connection(
    client: LlamaClient, fake: FakeLlamaServer
) -> None:
    fake.hang()
    started = time.monotonic()
    with pytest.raises(
        LlamaTimeout, match=r"node node0: POST /v1/embeddings: no answer within 0.3 s"
    ):
        await client.embed(["x"], timeout=0.3)
    assert 0.3 <= time.monotonic() - started < scaled(2.0)
    call = asyncio.create_task(client.chat(USER, max_tokens=4))
    while fake.in_flight < 1:
        await asyncio.sleep(0.01)
    await fake.stop()
    with pytest.raises(LlamaUnavailable) as caught:
        await call
    assert isinstance(caught.value, LlamaError) and caught.value.__cause__ is not None


async def test_a_fleet_of_fakes(session: aiohttp.ClientSession) -> None:
    fakes = [FakeLlamaServer(host=f"127.0.31.{k}", latency=0.1, slots=2) for k in (1, 2, 3)]
    for fake in fakes:
        await fake.start()
    try:
        clients = [LlamaClient(session, f.url, node=f"node{k}") for k, f in enumerate(fakes)]
        await asyncio.gather(*(c.embed(["x"]) for c in clients for _ in range(2)))
        assert [(f.calls["embeddings"], f.max_in_flight, f.in_flight) for f in fakes] == [
            (2, 2, 0)
        ] * 3
        await fakes[0].stop()
        with pytest.raises(LlamaUnavailable):
            await clients[0].health()
        await fakes[0].start()  # back on the same port
        assert (await clients[0].health()).is_ready
    finally:
        for fake in fakes:
            await fake.stop()


async def test_slots_queue_what_they_cannot_take(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(latency=0.1, slots=1) as fake:
        client = LlamaClient(session, fake.url, node="node0")
        started = time.monotonic()
        await asyncio.gather(*(client.embed(["x"]) for _ in range(3)))
        assert time.monotonic() - started >= 0.3  # one slot: the latencies add up
        assert fake.max_in_flight == 3 and fake.in_flight == 0
