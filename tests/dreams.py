"""A store built on the heuristics, then served with a chat model: what dreaming works on.

The first daemon has no model (its memories are typed by the heuristic), the second the same
store and embedder plus a fake chat model whose type and link answers come from tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.conftest import Running, StartDaemon
from tests.fakes.fleet import start_hosts, started
from tests.fakes.llama_server import FakeLlamaServer, Reply
from tests.pace import scaled
from tests.raw_sqlite import execute
from tests.settling import until_idle
from tests.test_api import call

NS = "http://smemd/ns/dreams"
V1 = "http://smemd/v1"

TEA = "Alex drinks green tea every morning."
HONEY = "Alex drinks green tea every morning with honey."
BOILER = "The boiler in the flat broke down last week."
EARLY = "Alex hates waking up before seven."
SURE, UNSURE = 0.95, 0.62
# Memories to calibrate on, text: (the model's pick, its probability, the truth a person labels).
# The sure picks are right and the unsure ones wrong: labels that disagree with a bar of 0.5.
GRADED = {
    "Alex works as a nurse at the city hospital.": ("fact", SURE, "fact"),
    "Sam prefers window seats on long flights.": ("preference", SURE, "preference"),
    "Alex adopted a cat in March 2024.": ("episode", SURE, "episode"),
    "Priya speaks Hindi and Portuguese fluently.": ("fact", SURE, "fact"),
    "Tom loves hiking in the Alps.": ("preference", SURE, "preference"),
    "The team shipped version two on Friday.": ("episode", SURE, "episode"),
    "Mia enjoys baking sourdough bread.": ("fact", UNSURE, "preference"),
    "Leo moved to Berlin in June 2023.": ("preference", UNSURE, "episode"),
    "Nora is allergic to peanuts.": ("episode", UNSURE, "fact"),
    "Omar likes jazz records.": ("episode", UNSURE, "preference"),
    "The roof was repaired in May 2022.": ("fact", UNSURE, "episode"),
    "Ivy adores black coffee.": ("episode", UNSURE, "preference"),
}


class JudgeTables:
    """The fake model's answers: a memory's type and its probability; which memory extends which;
    what follows from which memories (`inferences`: the inference, its sources and the judge's
    probability that it follows); whether two names are one (`aliases`, else 0.1)."""

    def __init__(
        self, types: Mapping[str, tuple[str, float]], links: Mapping[str, str] | None = None,
        inferences: Mapping[str, tuple[Sequence[str], float]] | None = None,
        aliases: Mapping[frozenset[str], float] | None = None,
    ) -> None:  # fmt: skip
        self.types = dict(types)
        self.links = dict(links or {})
        self.inferences = dict(inferences or {})
        self.aliases = dict(aliases or {})  # a pair of names: the judge's p that they are one
        self.asked: list[str] = []  # the kind of each judge question, in order
        self.shown: list[list[str]] = []  # the memories of each request for an inference

    def __call__(self, body: Mapping[str, Any]) -> str | Reply:
        prompt = body["messages"][-1]["content"]
        if "grammar" not in body:
            return self._infer(prompt) if "What follows from" in prompt else "[]"
        inference = re.search(r"^Inference: (.*)$", prompt, re.MULTILINE)
        if inference:
            self.asked.append("derives")
            _, p = self.inferences[inference.group(1)]
            return Reply(probs=_spread(prompt, "It follows", p))
        if "Do the two names refer to the same" in prompt:
            self.asked.append("alias")
            names = frozenset(re.findall(r'^Name \d: "(.*)"\.', prompt, re.MULTILINE))
            return Reply(probs=_spread(prompt, "The same", self.aliases.get(names, 0.1)))
        if "What kind of memory is each" in prompt:  # a batch: one letter per numbered memory
            self.asked.append("type")
            items = re.findall(r"^\d+\. (.*)$", prompt, re.MULTILINE)
            return Reply(positions=[self._type(prompt, text) for text in items])
        memory = re.search(r"^Memory: (.*)$", prompt, re.MULTILINE)
        assert memory, prompt
        text = memory.group(1)
        if "What kind of memory" in prompt:
            self.asked.append("type")
            return Reply(probs=self._type(prompt, text))
        self.asked.append("link")
        extended = self.links.get(text)
        shown = dict(re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE))
        number = next((n for n, t in shown.items() if t == extended), None)
        wording = f"adds detail to memory [{number}]" if number else "Neither"
        return Reply(probs=_spread(prompt, re.escape(wording), 0.95))

    def _infer(self, prompt: str) -> str:
        """The first inference whose sources are all shown, citing their numbers; else null."""
        shown = {t: int(n) for n, t in re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)}
        self.shown.append(list(shown))
        for text, (sources, _) in self.inferences.items():
            if all(source in shown for source in sources):
                return json.dumps({"inference": text, "uses": [shown[s] for s in sources]})
        return json.dumps({"inference": None, "uses": []})

    def _type(self, prompt: str, text: str) -> dict[str, float]:
        kind, p = self.types[text]
        return _spread(prompt, rf"It is an? {kind}:", p)


def tables() -> JudgeTables:
    """The fake model's answers: the tea memories (the honey one extends the other), the boiler
    (an episode, where the heuristic guessed a fact), the early riser (unsure) and the graded set."""
    types = {TEA: ("fact", 0.9), HONEY: ("fact", 0.9), BOILER: ("episode", 0.9),
             EARLY: ("preference", 0.4)}  # fmt: skip
    types |= {text: (pick, p) for text, (pick, p, _) in GRADED.items()}
    return JudgeTables(types, {HONEY: TEA})


@contextlib.asynccontextmanager
async def fake_pair(model: JudgeTables) -> AsyncIterator[dict[str, FakeLlamaServer]]:
    """An embedder ("embed") and a chat model answering from `model` ("llm"), on loopback."""
    fakes = {
        "embed": FakeLlamaServer(host="127.0.31.1"),
        "llm": FakeLlamaServer(host="127.0.31.2", roles=(), chat=model),
    }
    async with started(fakes):
        yield fakes


def _spread(prompt: str, wording: str, p: float) -> dict[str, float]:
    """`p` on the option that says `wording`, the rest spread evenly over the other letters."""
    letters = re.findall(r"^([A-Z])\. ", prompt, re.MULTILINE)
    found = re.search(rf"^([A-Z])\. .*{wording}", prompt, re.MULTILINE)
    assert found, (wording, prompt)
    rest = (1 - p) / (len(letters) - 1)
    return {letter: p if letter == found.group(1) else rest for letter in letters}


async def heuristic_store(
    start_daemon: StartDaemon, state_dir: Path, embedder: FakeLlamaServer, texts: Sequence[str]
) -> None:
    """Ingest each text as a document with no model, then stop that daemon."""
    node = [("node0", embedder, ["interactive", "background"], "embed")]
    running = await start_hosts(
        start_daemon, state_dir, node, name="heuristic.toml", extra="[engine]\ndreaming = false\n"
    )
    for text in texts:
        status, body, _ = await call(running.unix, "POST", f"{NS}/document", json={"content": text})
        assert status == 200, body
    engine = running.daemon.state.engine
    assert engine is not None
    await until_idle(engine)
    await unlink(running)
    await running.daemon.shutdown()


async def unlink(running: Running) -> None:
    """Drop the `extends` links ingest made, as a store from a build whose ingest never linked:
    dreaming has them to find."""
    engine = running.daemon.state.engine
    assert engine is not None
    await execute(engine.store, "DELETE FROM relations WHERE kind = 'extends'")


async def with_model(
    start_daemon: StartDaemon, state_dir: Path, embedder: FakeLlamaServer, model: FakeLlamaServer,
    *, quiet_s: float = 0.2, name: str = "model.toml",
) -> Running:  # fmt: skip
    nodes = [
        ("node0", embedder, ["interactive", "background"], "embed"),
        ("node1", model, ["interactive", "background"], "llm"),
    ]
    extra = f"[engine]\ndreaming-quiet-s = {quiet_s}\n"
    return await start_hosts(start_daemon, state_dir, nodes, name=name, extra=extra)


async def dreamt(running: Running, within: float = 20.0) -> dict[str, Any]:
    """Dreaming's status once it has nothing left to do."""
    deadline = time.monotonic() + scaled(within)
    while True:
        status, body, _ = await call(running.unix, "GET", f"{V1}/dreaming")
        assert status == 200, body
        backlog = body["untyped"] + body["unlinked"] + body["uninferred"]
        if body["state"] == "rested" and backlog == 0:
            return dict(body)
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.05)


async def memories(running: Running) -> dict[str, dict[str, Any]]:
    """The latest memories by text."""
    status, page, _ = await call(running.unix, "POST", f"{NS}/list/memories", json={})
    assert status == 200, page
    return {m["memory"]: m for m in page["memories"]}


async def judgements(running: Running, kind: str) -> list[dict[str, Any]]:
    path = f"{V1}/judgements?kind={kind}&namespace={NS.rsplit('/', 1)[1]}"
    status, body, _ = await call(running.unix, "GET", path)
    assert status == 200, body
    return list(body["judgements"])
