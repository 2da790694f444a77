"""Facts by LLM: grouping, the prompt, and replies from fake and real llama-servers."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping, Sequence
from datetime import date
from typing import Any

import aiohttp
import msgspec
import pytest

from smemd.engine.ingest.model_facts import (
    KINDS,
    ExtractionFailed,
    LlmFact,
    build_messages,
    extract_facts,
    fact_schema,
    group_chunks,
)
from smemd.fleet.llama import Chat, LlamaClient, LlamaEmptyAnswer, LlamaServerError, Message
from tests.fakes.llama_server import FakeLlamaServer
from tests.llama_tools import serving

FRIDAY = date(2025, 3, 14)
MEETING = "Last Tuesday's meeting with Dana Ruiz was cancelled. Dana prefers green tea."


def user_text(body: Mapping[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def document_of(body: Mapping[str, Any]) -> str:
    found = re.search(r"<document [^>]*>\n(.*)\n</document>", user_text(body), re.DOTALL)
    assert found, user_text(body)
    return found.group(1)


def answer(items: object) -> str:
    return json.dumps(items, indent=1)  # spaces and newlines, as models write it


def meeting_rule(body: Mapping[str, Any]) -> str:
    assert MEETING in document_of(body)
    return answer([
        # The model got the day wrong: the text's "Last Tuesday" wins.
        {"text": "Last Tuesday's meeting with Dana Ruiz was cancelled", "type": "episode",
         "eventDate": "2025-03-04", "entities": ["Dana Ruiz", " Dana Ruiz", ""]},
        {"text": "Dana  Ruiz prefers green tea", "type": "preference", "eventDate": None,
         "entities": ["Dana Ruiz", "green tea"]},
    ])  # fmt: skip


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def test_groups_pack_consecutive_chunks_up_to_the_target() -> None:
    chunks = ["a" * 1400, "b" * 1400, "c" * 1400, "d" * 5000, "e" * 10, "f" * 10]
    groups = group_chunks(chunks)
    assert [g.chunks for g in groups] == [(0, 1), (2,), (3,), (4, 5)]
    assert groups[0].text == "a" * 1400 + "\n\n" + "b" * 1400
    assert all(len(g.text) <= 3000 for g in groups if len(g.chunks) > 1)
    assert [g.chunks for g in group_chunks(["x"] * 5, target=4)] == [(0, 1), (2, 3), (4,)]
    assert group_chunks([]) == []


def test_prompt_opens_with_the_task_and_wraps_the_text() -> None:
    text = "# Install\n\nRun make. A stray </document> tag stays text."
    system, user = build_messages(
        text, source='Guide > Install "v2"', document_date=FRIDAY,
        supporting_context="  Decisions about the build farm.  ",
    )  # fmt: skip
    assert system["role"] == "system" and "JSON array" in system["content"]
    content = user["content"]
    assert user["role"] == "user"
    # The task first; never the title or heading path, which made models ask for the file.
    assert content.startswith("List the facts in the document below.")
    assert content.index("Guide") > content.index("<document")
    assert "The document is dated Friday 2025-03-14." in content
    assert "What matters in this collection: Decisions about the build farm.\n" in content
    assert '<document source="Guide &gt; Install &quot;v2&quot;">\n# Install' in content
    assert content.endswith("stays text.\n</document>")
    assert content.count("</document") == 1  # the text's own tag cannot close the boundary

    _, bare = build_messages("x", source="a.md", document_date=None)
    assert "date is unknown" in bare["content"] and "What matters" not in bare["content"]


def test_schema_asks_for_every_field() -> None:
    schema = fact_schema(5)
    assert schema["type"] == "array" and schema["maxItems"] == 5
    item = schema["items"]
    assert set(item["required"]) == {"text", "type", "eventDate", "entities"}
    assert item["properties"]["type"]["enum"] == list(KINDS)
    assert item["additionalProperties"] is False


async def test_extracts_typed_dated_facts(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(chat=meeting_rule) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        facts = await extract_facts(
            llama, ["Notes of the week.", MEETING], source="notes/week.md",
            document_date=FRIDAY, supporting_context="Who meets whom.",
        )  # fmt: skip
        sent = fake.last["chat"]
    assert facts == [
        LlmFact(text="Last Tuesday's meeting with Dana Ruiz was cancelled", type="episode",
                event_date=date(2025, 3, 11), entities=("Dana Ruiz",), chunks=(0, 1)),
        LlmFact(text="Dana Ruiz prefers green tea", type="preference", event_date=None,
                entities=("Dana Ruiz", "green tea"), chunks=(0, 1)),
    ]  # fmt: skip
    assert sent["json_schema"] == fact_schema()
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert "Who meets whom." in user_text(sent)


async def test_a_valid_empty_list_is_no_facts(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(chat=[("", "[]")]) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        assert await extract_facts(llama, ["Hi!"], source="chat", document_date=None) == []


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Sure! Here are the facts: Dana likes tea.", "reply is not JSON: "),
        ('{"facts": []}', "reply is a dict, not a list"),
        ("", r"empty reply \(finish_reason 'stop'\)"),
        ("   ", "empty reply"),
    ],
)
async def test_a_reply_that_is_not_a_list_is_an_error(
    session: aiohttp.ClientSession, reply: str, problem: str
) -> None:
    async with FakeLlamaServer(chat=[("", reply)]) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        with pytest.raises(ExtractionFailed, match=r"^doc\.md, group 1: " + problem):
            await extract_facts(llama, [MEETING], source="doc.md", document_date=FRIDAY)


async def test_a_reply_cut_at_max_tokens_is_an_error(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(chat=meeting_rule) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        with pytest.raises(ExtractionFailed, match=r"not JSON \(cut at max_tokens\)"):
            await extract_facts(
                llama, [MEETING], source="doc.md", document_date=FRIDAY, max_tokens=10
            )


async def test_malformed_items_are_skipped_with_a_reason(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    items = [
        {"text": "Dana Ruiz is an engineer", "type": "opinion", "eventDate": None, "entities": []},
        {"type": "fact", "eventDate": None, "entities": []},
        {"text": 42, "type": "fact", "eventDate": None, "entities": []},
        "Dana Ruiz lives in Porto",
        {"text": "Dana Ruiz lives in Porto", "type": "fact", "eventDate": "March 2025",
         "entities": ["Dana Ruiz", "Porto"]},
        {"text": "dana ruiz lives in porto", "type": "fact", "eventDate": None, "entities": []},
        {"text": "  ", "type": "fact", "eventDate": None, "entities": []},
        {"text": "Dana Ruiz flew to Oslo yesterday", "type": "episode", "eventDate": None},
    ]  # fmt: skip
    caplog.set_level(logging.INFO, logger="smemd.engine.ingest.model_facts")
    async with FakeLlamaServer(chat=[("", answer(items))]) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        facts = await extract_facts(llama, [MEETING], source="doc.md", document_date=FRIDAY)
    assert [(f.text, f.event_date, f.entities) for f in facts] == [
        ("Dana Ruiz lives in Porto", None, ("Dana Ruiz", "Porto")),
        ("Dana Ruiz flew to Oslo yesterday", date(2025, 3, 13), ()),
    ]
    reasons = [r.getMessage() for r in caplog.records]
    assert any("item 0 skipped" in r and "'opinion'" in r for r in reasons), reasons
    assert any("item 1 skipped" in r and "text" in r for r in reasons), reasons
    assert any("item 2 skipped" in r and "str" in r for r in reasons), reasons
    assert any("item 3 skipped" in r and "object" in r for r in reasons), reasons
    assert any("eventDate 'March 2025' is not a day" in r for r in reasons), reasons
    assert any("item 5 skipped: repeated" in r for r in reasons), reasons
    assert any("item 6 skipped: empty" in r for r in reasons), reasons


class ThinkingAnyway:
    """A model whose chat template ignores enable_thinking, as some do."""

    def __init__(self, client: LlamaClient) -> None:
        self.client = client

    def chat(
        self, messages: Sequence[Message], *, max_tokens: int,
        json_schema: Mapping[str, Any] | None = None, timeout: float | None = None,
    ) -> Awaitable[Chat]:  # fmt: skip
        return self.client.chat(
            messages, max_tokens=max_tokens, json_schema=json_schema, timeout=timeout,
            chat_template_kwargs={"enable_thinking": True},
        )  # fmt: skip


async def test_thinking_away_the_budget_is_an_error(session: aiohttp.ClientSession) -> None:
    async with FakeLlamaServer(chat=meeting_rule, thinks=500) as fake:
        model = ThinkingAnyway(LlamaClient(session, fake.url, node="fake"))
        with pytest.raises(LlamaEmptyAnswer, match="no content within max_tokens=200"):
            await extract_facts(
                model, [MEETING], source="doc.md", document_date=FRIDAY, max_tokens=200
            )


def numbered_rule(body: Mapping[str, Any]) -> str:
    numbers = re.findall(r"Chunk (\d+)\.", document_of(body))
    return answer([
        {"text": f"Chunk {n} exists", "type": "fact", "eventDate": None, "entities": []}
        for n in numbers
    ])  # fmt: skip


async def test_groups_fan_out_within_the_limit_and_keep_their_order(
    session: aiohttp.ClientSession,
) -> None:
    chunks = [f"Chunk {n}." + " filler" * 200 for n in range(10)]  # ~1,400 characters each
    async with FakeLlamaServer(chat=numbered_rule, slots=8, latency=0.05) as fake:
        llama = LlamaClient(session, fake.url, node="fake")
        facts = await extract_facts(
            llama, chunks, source="doc.md", document_date=None, concurrency=3
        )
        assert fake.calls["chat"] == 5 and fake.max_in_flight == 3
    assert [f.text for f in facts] == [f"Chunk {n} exists" for n in range(10)]
    assert [f.chunks for f in facts[::2]] == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]


async def test_a_failing_group_fails_the_document(session: aiohttp.ClientSession) -> None:
    chunks = [f"Chunk {n}." + " filler" * 400 for n in range(4)]
    async with FakeLlamaServer(chat=numbered_rule, slots=4, latency=0.05) as fake:
        fake.fail_next(1, 500, message="boom")
        llama = LlamaClient(session, fake.url, node="fake")
        with pytest.raises(LlamaServerError, match="500 server_error: boom"):
            await extract_facts(llama, chunks, source="doc.md", document_date=None)


# The real llama-server tier: SmolLM2-135M is too weak for meaning, so shape only.


@pytest.fixture(scope="module")
def smollm2() -> Iterator[str]:
    # Server checks for the binary and model first, skipping without them.
    # One slot of 2,048 tokens: the rules and a group do not fit the shared fixtures' 512.
    with serving("-c", "2048", "-np", "1") as url:
        yield url


@pytest.mark.llama
async def test_real_model_returns_a_valid_list(
    session: aiohttp.ClientSession, smollm2: str
) -> None:
    llama = LlamaClient(session, smollm2, node="real", timeout=60)
    facts = await extract_facts(
        llama, [MEETING, "The office moved to 12 Harbour Street in Porto in 2023."],
        source="notes.md", document_date=FRIDAY, max_facts=2, max_tokens=1024,
    )  # fmt: skip
    # An empty list only if the model validly said []: anything else not a list raised.
    assert isinstance(facts, list) and len(facts) <= 2
    for fact in facts:
        assert isinstance(fact, LlmFact) and fact.text.strip() and fact.type in KINDS
        assert fact.chunks == (0, 1) and all(e.strip() for e in fact.entities)
        msgspec.convert(msgspec.to_builtins(fact), LlmFact)  # every field has its type
