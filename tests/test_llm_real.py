"""`ask`'s prompt against the real llama-server (SmolLM2-135M): shape, not meaning.

The model is too small to be right; it is held to the protocol: given the numbered evidence, it
answers in text, and the citations kept are numbers the evidence has.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import aiohttp
import pytest

from smemd.engine.evidence import answer_prompt, compress, parse_citations
from smemd.fleet.llama import LlamaClient
from tests.llama_tools import serving
from tests.test_evidence import m_hit, memory

pytestmark = pytest.mark.llama


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
