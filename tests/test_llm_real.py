"""The prompts against the real llama-server (SmolLM2-135M): shape, not meaning.

The model is too small to be right; it is held to the protocol: given the numbered evidence, it
answers in text, and the citations kept are numbers the evidence has; asked for facts, it answers
with a JSON list under the schema; asked for an inference, it answers with the schema's object;
asked a lettered question, every letter gets a probability.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import date
from types import SimpleNamespace
from typing import Any

import aiohttp
import msgspec
import pytest

from smemd.engine.dreaming.inference_prompt import inference_schema, write_inference
from smemd.engine.ingest.model_facts import KINDS, extract_facts
from smemd.engine.judgement.letter_judge import TOP_LOGPROBS, Judge, Judgement, letters_for
from smemd.engine.judgement.questions import (
    alias_options,
    derives_options,
    reconcile_options,
    type_batch,
    type_options,
)
from smemd.engine.recall.evidence import answer_prompt, compress, parse_citations
from smemd.fleet.llama import LlamaClient
from tests.llama_tools import serving
from tests.test_evidence import m_hit, memory

pytestmark = pytest.mark.llama

# Generous for a 135M model on one thread of a busy 2-core machine (~50 tokens/s idle), and
# still well inside the 60 s a test gets.
CALL_TIMEOUT = 40.0


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with serving("-c", "2048", "-np", "1") as url:
        yield url


async def test_an_answer_cites_only_evidence_that_exists(model_url: str) -> None:
    hits = [
        m_hit(memory("Alex lives in Seattle.", id="mem_1")),
        m_hit(memory("Alex works as a nurse at the city hospital.", id="mem_2")),
    ]
    packed = compress(hits)
    async with aiohttp.ClientSession() as session:
        client = LlamaClient(session, model_url, node="real")
        reply = await client.chat(
            answer_prompt("Where does Alex live?", packed), max_tokens=64, timeout=60
        )
    assert reply.content.strip()
    # Whatever the small model wrote, the citations kept are the [n] it wrote that exist.
    written = [int(n) for n in re.findall(r"\[(\d+)\]", reply.content)]
    expected = list(dict.fromkeys(n for n in written if 1 <= n <= len(packed.items)))
    assert parse_citations(reply.content, len(packed.items)) == expected


async def test_extraction_replies_with_facts_under_the_schema(model_url: str) -> None:
    chunks = [
        "Alex moved to Seattle in 2024. Alex loves hiking on weekends.",
        "Yesterday Alex ran a half marathon in two hours.",
    ]
    async with aiohttp.ClientSession() as session:
        client = LlamaClient(session, model_url, node="real")
        # Few facts: the grammar then closes the list early, where SmolLM2 left to itself
        # repeats one item until max_tokens cuts the JSON (seen: 512 tokens, 6+ copies).
        facts = await extract_facts(
            client, chunks, source="notes.md", document_date=date(2025, 3, 14),
            supporting_context="Alex's life and habits.", max_facts=3, max_tokens=1024,
            timeout=CALL_TIMEOUT,
        )  # fmt: skip
    # A reply that was not a JSON list would have raised ExtractionFailed: a list, maybe empty.
    assert isinstance(facts, list)
    assert len(facts) <= 3
    for fact in facts:
        assert fact.text.strip() == fact.text and fact.text
        assert fact.type in KINDS
        assert fact.event_date is None or isinstance(fact.event_date, date)
        assert all(entity.strip() for entity in fact.entities)
        assert fact.chunks and set(fact.chunks) <= set(range(len(chunks)))


def recording_session() -> tuple[aiohttp.ClientSession, list[bytes], list[bytes]]:
    """A session that keeps every request body it sends and every reply body it reads."""
    sent: list[bytes] = []
    received: list[bytes] = []

    async def on_sent(
        _s: Any, _c: SimpleNamespace, params: aiohttp.TraceRequestChunkSentParams
    ) -> None:
        sent.append(params.chunk)

    async def on_received(
        _s: Any, _c: SimpleNamespace, params: aiohttp.TraceResponseChunkReceivedParams
    ) -> None:
        received.append(params.chunk)

    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(on_sent)
    trace.on_response_chunk_received.append(on_received)
    return aiohttp.ClientSession(trace_configs=[trace]), sent, received


def assert_letter_shape(judgement: Judgement, letters: str) -> None:
    assert list(judgement.probabilities) == list(letters)
    assert all(0.0 <= p <= 1.0 for p in judgement.probabilities.values())
    if judgement.mass > 0:
        assert math.fsum(judgement.probabilities.values()) == pytest.approx(1.0, abs=1e-6)
    else:
        assert set(judgement.probabilities.values()) == {0.0}
    assert judgement.raw_top
    assert len(judgement.raw_top) <= TOP_LOGPROBS
    assert set(judgement.missing) <= set(letters)
    assert judgement.choice is None or judgement.choice in letters
    assert judgement.pick is None or judgement.pick in letters


@pytest.mark.parametrize("kind", ["reconcile", "type", "alias"])
async def test_the_judge_reads_a_probability_for_every_letter(model_url: str, kind: str) -> None:
    if kind == "reconcile":
        question = reconcile_options(
            "Alex lives in Portland now.", ["Alex lives in Seattle.", "Alex likes hiking."]
        ).question
    elif kind == "alias":
        question = alias_options(
            "person",
            ("Robert Smith", ["Robert Smith moved to Denver.", "Robert Smith is a plumber."]),
            ("Bob", ["Bob fixed my sink; he was a plumber for years."]),
        )
    else:
        question = type_options("Alex loves hiking on weekends.")
    letters = letters_for(len(question.options))
    assert len(letters) == {"reconcile": 7, "type": 3, "alias": 2}[kind]
    session, sent, received = recording_session()
    async with session:
        judge = Judge(LlamaClient(session, model_url, node="real"), timeout=CALL_TIMEOUT)
        judgement = await judge.decide(question)
    assert_letter_shape(judgement, letters)
    # What the server was asked: the judge's default top list, which has room for every letter.
    body = msgspec.json.decode(b"".join(sent))
    assert body["logprobs"] is True
    assert body["top_logprobs"] == TOP_LOGPROBS >= len(letters)
    assert body["max_tokens"] == 1
    # ... and what it listed: that many candidates for the one token generated.
    reply = msgspec.json.decode(b"".join(received))
    first = reply["choices"][0]["logprobs"]["content"][0]
    assert len(first["top_logprobs"]) == TOP_LOGPROBS


async def test_a_batch_of_memories_gets_a_reading_for_each(model_url: str) -> None:
    texts = ["Alex works as a nurse.", "Alex loves jazz.", "Alex moved to Portland last May."]
    session, sent, received = recording_session()
    async with session:
        judge = Judge(LlamaClient(session, model_url, node="real"), timeout=CALL_TIMEOUT)
        judgements = await judge.decide_batch(type_batch(texts))
    assert len(judgements) == 3
    for judgement in judgements:
        assert_letter_shape(judgement, "ABC")
    # The grammar held the model to "X Y Z": three letters, each read at its own position.
    reply = msgspec.json.decode(b"".join(received))
    generated = reply["choices"][0]["message"]["content"]
    assert re.fullmatch(r"[ABC] [ABC] [ABC]", generated), generated
    assert msgspec.json.decode(b"".join(sent))["max_tokens"] == 6


async def test_an_inference_round_trip_is_well_formed(model_url: str) -> None:
    memories = ["Alex works at a hospital.", "Alex's shifts are at night.", "Alex likes jazz."]
    session, _, received = recording_session()
    async with session:
        client = LlamaClient(session, model_url, node="real")
        inference = await write_inference(client, memories, timeout=CALL_TIMEOUT)
        # Whatever the model wrote, the grammar held it to the schema's object.
        reply = msgspec.json.decode(b"".join(received))
        written = msgspec.json.decode(reply["choices"][0]["message"]["content"])
        assert set(written) == set(inference_schema(3)["properties"])
        assert written["inference"] is None or isinstance(written["inference"], str)
        assert all(1 <= n <= 3 for n in written["uses"])
        # None: nothing, one memory, or a memory said again. Else two memories at least.
        if inference is not None:
            assert inference.text and len(inference.uses) >= 2
            assert set(inference.uses) <= {0, 1, 2}
        text, uses = (
            (inference.text, inference.uses)
            if inference is not None
            else ("Alex works night shifts at a hospital.", (0, 1))
        )
        judge = Judge(client, timeout=CALL_TIMEOUT)
        judgement = await judge.decide(derives_options(text, [memories[i] for i in uses]))
    assert_letter_shape(judgement, "AB")
