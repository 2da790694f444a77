"""Ingest with a chat model: the LLM reads the facts and the letter judge reconciles them.

A `hosts` fleet of two fakes: one embeds, one is the chat model. The model's rules stand for a
good model: extraction answers JSON facts, and the judge's letters carry chosen probabilities.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer, Reply
from tests.settling import until_idle
from tests.test_api import call

NS = "http://smemd/ns/llm"
FACTS = {
    "Seattle": [{"text": "Alex lives in Seattle", "type": "fact", "eventDate": None,
                 "entities": ["Alex", "Seattle"]}],
    "Portland": [{"text": "Alex lives in Portland", "type": "fact", "eventDate": None,
                  "entities": ["Alex", "Portland"]}],
    "balcony": [{"text": "Alex lives in Portland in a flat with a balcony", "type": "fact",
                 "eventDate": None, "entities": ["Alex"]}],
    "resides": [{"text": "Alex resides in the city of Portland", "type": "fact", "eventDate": None,
                 "entities": ["Alex", "Portland"]}],
    "Denver": [{"text": "Alex lives in Denver", "type": "fact", "eventDate": None,
                "entities": ["Alex", "Denver"]}],
    "meeting": [{"text": "The meeting with Sam was cancelled", "type": "episode",
                 "eventDate": "2025-03-12", "entities": ["Sam"]}],
}  # fmt: skip
# What the judge's options say, by outcome, for memory [1].
OUTCOMES = {
    "updates": "replaces memory [1]",
    "extends": "adds detail to memory [1]",
    "duplicate": "says the same as memory [1]",
}


def letter_for(prompt: str, wording: str) -> str:
    found = re.search(rf"^([A-Z])\. .*{re.escape(wording)}", prompt, re.MULTILINE)
    assert found, (wording, prompt)
    return found.group(1)


EXTRACTION_PROMPTS: list[str] = []


def model(body: Mapping[str, Any]) -> str | Reply:
    prompt = body["messages"][-1]["content"]
    if "json_schema" in body:
        EXTRACTION_PROMPTS.append(prompt)
        if "empty" in prompt:
            return ""  # a reasoning model that spent its budget thinking
        text = prompt.split("<document", 1)[-1]
        keys = ("balcony", "resides", "meeting", "Denver", "Portland", "Seattle")
        key = next((k for k in keys if k in text), None)
        return json.dumps(FACTS[key] if key else [])
    if "grammar" in body:  # the reconciliation judge
        new_fact = prompt.split("New fact:", 1)[1].splitlines()[0]
        if "Denver" in new_fact:  # leaning to a change, under the bar
            change = letter_for(prompt, OUTCOMES["updates"])
            first, second = [letter for letter in "ABCD" if letter != change][:2]
            return Reply(probs={change: 0.4, first: 0.3, second: 0.3})
        outcome = (
            "extends" if "balcony" in new_fact
            else "duplicate" if "resides" in new_fact
            else "updates"
        )  # fmt: skip
        return Reply(probs={letter_for(prompt, OUTCOMES[outcome]): 0.9, "A": 0.05})
    return "ok"


@pytest.fixture
async def running(short_dir: Path, start_daemon: StartDaemon) -> AsyncIterator[Running]:
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2", roles=(), chat=model),
    }
    async with started(servers):
        yield await start_hosts(
            start_daemon,
            short_dir,
            [
                ("node0", servers["node0"], ["interactive", "background"], "embed"),
                ("node1", servers["node1"], ["interactive", "background"], "llm"),
            ],
        )


async def ingest(running: Running, content: str) -> dict[str, Any]:
    body: dict[str, Any] = {"content": content}
    status, doc, _ = await call(running.unix, "POST", f"{NS}/document", json=body)
    assert status == 200, doc
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    status, doc, _ = await call(running.unix, "GET", f"{NS}/document/{doc['id']}")
    return dict(doc)


async def memories(running: Running, history: bool = False) -> list[dict[str, Any]]:
    body = {"history": history}
    status, page, _ = await call(running.unix, "POST", f"{NS}/list/memories", json=body)
    assert status == 200, page
    return list(page["memories"])


async def test_the_model_reads_facts_and_the_judge_versions_them(running: Running) -> None:
    _, body, _ = await call(running.unix, "GET", "http://smemd/v1/status")
    assert body["heuristics"] == []
    await ingest(running, "Hi! So, Alex lives in Seattle these days.")
    (seattle,) = await memories(running)
    assert seattle["memory"] == "Alex lives in Seattle"
    # The model's type and entities are kept with the memory.
    assert seattle["typedBy"] == "extraction" and seattle["entities"] == ["Alex", "Seattle"]
    await ingest(running, "News: Alex moved to Portland last spring.")
    latest = await memories(running)
    assert [m["memory"] for m in latest] == ["Alex lives in Portland"]
    portland = latest[0]
    assert portland["version"] == 2 and portland["isLatest"]
    await ingest(running, "The new place in Portland has a balcony.")
    texts = {m["memory"] for m in await memories(running)}
    assert texts == {"Alex lives in Portland", "Alex lives in Portland in a flat with a balcony"}
    status, found, _ = await call(
        running.unix, "POST", f"{NS}/search",
        json={"query": "balcony flat", "include": {"related": True}, "limit": 1},
    )  # fmt: skip
    assert status == 200 and found["results"][0]["memory"].endswith("balcony"), found
    assert found["results"][0]["entities"] == ["Alex"]
    assert found["results"][0]["typedBy"] == "extraction"
    # The names the model gave are the entity rows; the finder only guesses their kinds.
    status, listed, _ = await call(running.unix, "GET", f"{NS}/entities")
    assert status == 200, listed
    assert {e["name"]: (e["kind"], e["memories"]) for e in listed["entities"]} == {
        "Alex": ("person", 2), "Portland": ("place", 1), "Seattle": ("place", 0),
    }  # fmt: skip
    siblings = found["results"][0]["included"]["related"]["siblings"]
    assert [(m["memory"], m["relation"]) for m in siblings] == [
        ("Alex lives in Portland", "extends")
    ]
    # Said again in other words: the judge calls it a duplicate; a source, not a memory.
    again = await ingest(running, "Alex resides in Portland, as you know.")
    assert {m["memory"] for m in await memories(running)} == texts
    status, doc, _ = await call(
        running.unix, "GET", f"{NS}/document/{again['id']}?include=memories"
    )
    assert status == 200, doc
    assert [m["id"] for m in doc["memories"]] == [portland["id"]]  # it is one of its sources
    every = await memories(running, history=True)
    by_text = {m["memory"]: m for m in every}
    assert by_text["Alex lives in Seattle"]["isLatest"] is False
    # Each call of the judge is logged with its probabilities and the memory it made.
    status, log, _ = await call(running.unix, "GET", "http://smemd/v1/judgements?kind=reconcile")
    assert status == 200, log
    calls = {c["text"]: c for c in log["judgements"]}
    assert set(calls) == {
        "Alex lives in Portland",
        "Alex lives in Portland in a flat with a balcony",
        "Alex resides in the city of Portland",
    }
    seattle, portland = (
        by_text["Alex lives in Seattle"]["id"],
        by_text["Alex lives in Portland"]["id"],
    )
    moved = calls["Alex lives in Portland"]
    assert moved["subjectId"] == portland and moved["applied"] == f"updates:{seattle}"
    assert moved["proposal"] == moved["applied"] and moved["decided"]
    # The heuristic's answer is kept beside it: these fakes' vectors are under its update bar.
    assert moved["fallback"] == "distinct"
    assert len(moved["options"]) == len(moved["probabilities"]) == 4
    assert max(moved["probabilities"]) == pytest.approx(0.9 / 0.95, abs=1e-4)
    balcony = calls["Alex lives in Portland in a flat with a balcony"]
    assert balcony["applied"] == f"extends:{portland}"
    assert balcony["fallback"] == f"extends:{portland}"  # it says all the old fact says, and more
    duplicate = calls["Alex resides in the city of Portland"]
    assert duplicate["applied"] == f"duplicate:{portland}" and duplicate["subjectId"] == portland


async def test_an_empty_model_answer_fails_the_job_and_stores_nothing(running: Running) -> None:
    doc = await ingest(running, "This one comes back empty.")
    assert doc["system"]["status"] == "failed", doc
    assert await memories(running) == []


async def test_the_namespace_supporting_context_guides_extraction(running: Running) -> None:
    guide = "Track where people live and what they cancel."
    await ingest(running, "Sam lives in Lyon.")  # a namespace is made by its first write
    status, _, _ = await call(running.unix, "PATCH", NS, json={"supportingContext": guide})
    assert status == 200
    EXTRACTION_PROMPTS.clear()
    await ingest(running, "The meeting with Sam was cancelled.")
    assert len(EXTRACTION_PROMPTS) == 1 and guide in EXTRACTION_PROMPTS[0]
    assert "<document" in EXTRACTION_PROMPTS[0]
    (memory,) = await memories(running)
    assert memory["type"] == "episode" and memory["eventAt"].startswith("2025-03-12")


async def test_extraction_calls_are_bounded_by_their_own_timeout(
    short_dir: Path, start_daemon: StartDaemon
) -> None:
    """A model slower than `extraction-timeout-s` fails the job (after its retries) with a
    timeout: the setting, not the client's 30 s default, bounds the call."""
    servers = {
        "node0": FakeLlamaServer(host="127.0.31.1"),
        "node1": FakeLlamaServer(host="127.0.31.2", roles=(), chat=model, latency=1.5),
    }
    async with started(servers):
        running = await start_hosts(
            start_daemon, short_dir,
            [
                ("node0", servers["node0"], ["interactive", "background"], "embed"),
                ("node1", servers["node1"], ["interactive", "background"], "llm"),
            ],
            extra="[engine]\nextraction-timeout-s = 1\n",
        )  # fmt: skip
        doc = await ingest(running, "Hi! So, Alex lives in Seattle these days.")
    assert doc["system"]["status"] == "failed", doc
    status, jobs, _ = await call(running.unix, "GET", "http://smemd/v1/jobs")
    assert status == 200
    (job,) = [j for j in jobs["jobs"] if j["documentId"] == doc["id"]]
    assert job["error"].endswith("no answer within 1 s"), job


async def test_a_change_the_judge_is_unsure_of_is_a_contradiction(running: Running) -> None:
    await ingest(running, "Portland")
    await ingest(running, "Denver")
    by_text = {m["memory"]: m for m in await memories(running)}
    portland, denver = by_text["Alex lives in Portland"], by_text["Alex lives in Denver"]
    # Neither supersedes the other: both stay latest, and the pair waits for a person.
    assert portland["isLatest"] and denver["isLatest"]
    engine = running.daemon.state.engine
    assert engine is not None
    async with engine.store.read() as reader:
        relations = await reader.relations_of([denver["id"]])
    assert [(r.from_id, r.to_id, r.kind) for r in relations] == [
        (denver["id"], portland["id"], "contradicts")
    ]
    status, log, _ = await call(running.unix, "GET", "http://smemd/v1/judgements?kind=reconcile")
    assert status == 200, log
    (unsure,) = [c for c in log["judgements"] if c["text"] == "Alex lives in Denver"]
    assert not unsure["decided"] and unsure["proposal"] == f"updates:{portland['id']}"
    assert unsure["applied"] == f"contradicts:{portland['id']}" and unsure["fallback"] == "distinct"
