"""The labelled judge sets in tests/data, and tests/bench/judges.py run against a fake llama-server."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from smemd.engine.dreaming.typer import TYPE_BATCH
from smemd.engine.judgement.letter_judge import Judge
from smemd.fleet.llama import LlamaClient
from tests.bench import judges
from tests.fakes.llama_server import FakeLlamaServer, Reply

REPO = Path(__file__).resolve().parents[1]
KINDS = ("duplicate", "updates", "extends", "distinct")
TYPES = ("fact", "preference", "episode")
# How the judge words each option: enough to find the right letter in the rendered question.
OPTION_WORDS = {
    "duplicate": "the same as memory [{n}]",
    "updates": "replaces memory [{n}]",
    "extends": "adds detail to memory [{n}]",
    "distinct": "none of the above",
    "fact": "a fact:",
    "preference": "a preference:",
    "episode": "an episode:",
}
_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.MULTILINE)
_MEMORY = re.compile(r"^\[\d+\] (.*)$", re.MULTILINE)


def raw(name: str) -> list[dict[str, Any]]:
    """A data file read as plain JSON, apart from the bench's own loader."""
    lines = (judges.DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def same(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".")


def test_the_files_parse_with_enough_cases_in_balance() -> None:
    reconcile, types = judges.load_reconcile(), judges.load_types()
    assert len(reconcile) == len(raw("reconcile.jsonl")) >= 40
    assert len(types) == len(raw("types.jsonl")) >= 40
    for counts in (
        Counter(case.expected.kind for case in reconcile),
        Counter(case.expected for case in types),
    ):
        assert max(counts.values()) - min(counts.values()) <= 2, counts
    assert set(Counter(c.expected.kind for c in reconcile)) == set(KINDS)
    assert set(Counter(c.expected for c in types)) == set(TYPES)
    assert all(case.note.strip() for case in reconcile)
    assert all(case.note.strip() for case in types)
    # The boundary cases say why they fall where they do.
    assert sum("boundary" in case.note for case in types) >= 10
    assert sum("hard" in case.note for case in reconcile) >= 10


def test_every_reconciliation_case_is_well_formed() -> None:
    for case in judges.load_reconcile():
        assert 1 <= len(case.neighbours) <= 3, case
        texts = [same(text) for text in case.neighbours]
        assert len(set(texts)) == len(texts), case
        # A duplicate must be a paraphrase: the same words would make it a string comparison.
        assert same(case.candidate) not in texts, case
        if case.expected.kind == "distinct":
            assert case.expected.neighbour is None, case
        else:
            assert case.expected.neighbour in range(len(case.neighbours)), case
    # The right neighbour is not always the first, for each kind that names one.
    cases = judges.load_reconcile()
    for kind in KINDS[:3]:
        assert {c.expected.neighbour for c in cases if c.expected.kind == kind} > {0}, kind


def test_no_case_is_there_twice() -> None:
    reconcile = [(same(c.candidate), *map(same, c.neighbours)) for c in judges.load_reconcile()]
    assert len(set(reconcile)) == len(reconcile)
    candidates = [key[0] for key in reconcile]
    assert len(set(candidates)) == len(candidates)
    texts = [same(c.text) for c in judges.load_types()]
    assert len(set(texts)) == len(texts)


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    good = {"candidate": "a", "neighbours": ["b"], "expected": {"kind": "distinct",
            "neighbour": None}, "note": "n"}  # fmt: skip
    bad = {**good, "expected": {"kind": "contradicts", "neighbour": 0}}
    path = tmp_path / "reconcile.jsonl"
    path.write_text(f"{json.dumps(good)}\n\n{json.dumps(bad)}\n")
    with pytest.raises(ValueError, match=r"reconcile.jsonl:3: .*expected.kind"):
        judges.load_reconcile(path)
    path.write_text(json.dumps({**good, "label": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"reconcile.jsonl:1: .*label"):
        judges.load_reconcile(path)


def knows_the_answers() -> Callable[[Mapping[str, Any]], Reply]:
    """A chat rule that finds the case in the question and puts 0.9 on its expected letter."""
    answers: dict[tuple[str, ...], str] = {}
    for case in raw("reconcile.jsonl"):
        n = case["expected"]["neighbour"]
        words = OPTION_WORDS[case["expected"]["kind"]].format(n=None if n is None else n + 1)
        answers[(case["candidate"], *case["neighbours"])] = words
    for case in raw("types.jsonl"):
        answers[(case["text"],)] = OPTION_WORDS[case["expected"]]

    def letter(options: Mapping[str, str], key: tuple[str, ...]) -> dict[str, float]:
        (right,) = [k for k, text in options.items() if answers[key] in text]
        wrong = next(k for k in options if k != right)
        return {right: 0.9, wrong: 0.06, "The": 0.04}

    def rule(body: Mapping[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        options = dict(_OPTION.findall(user))
        if "each numbered memory" in user:  # a typing batch: one letter per numbered memory
            items = re.findall(r"^\d+\. (.*)$", user, re.MULTILINE)
            return Reply(positions=[letter(options, (item,)) for item in items])
        if memory := re.search(r"^Memory: (.*)$", user, re.MULTILINE):
            key: tuple[str, ...] = (memory.group(1),)
        else:
            fact = re.search(r"^New fact: (.*)$", user, re.MULTILINE)
            assert fact is not None, user
            key = (fact.group(1), *_MEMORY.findall(user))
        return Reply(probs=letter(options, key))

    return rule


def always_a(body: Mapping[str, Any]) -> Reply:
    return Reply(probs={"A": 0.8, " B": 0.1, "Hmm": 0.1})


def torn(body: Mapping[str, Any]) -> Reply:
    return Reply(probs={"A": 0.45, "B": 0.45, "The": 0.1})


async def test_a_judge_that_knows_the_answers_scores_one() -> None:
    async with FakeLlamaServer(host="127.0.31.6", chat=knows_the_answers()) as fake:
        line = await judges.run(fake.url)
    n_reconcile, n_types = len(raw("reconcile.jsonl")), len(raw("types.jsonl"))
    batches = -(-n_types // TYPE_BATCH)
    assert fake.calls["chat"] == n_reconcile + n_types + batches and fake.calls["props"] == 1
    assert re.fullmatch(
        rf"judges url={re.escape(fake.url)} model=fake\.gguf "
        rf"reconcile n={n_reconcile} accuracy=1\.000 undecided=0 "
        rf"types n={n_types} accuracy=1\.000 undecided=0 p50_ms=\d+\.\d "
        rf"types_batched n={n_types} accuracy=1\.000 undecided=0 per_case_ms=\d+\.\d",
        line,
    ), line


async def test_always_a_scores_the_share_of_cases_whose_answer_is_a() -> None:
    reconcile = judges.load_reconcile()
    types = judges.load_types()
    async with (
        FakeLlamaServer(host="127.0.31.6", chat=always_a, latency=0.005) as fake,
        aiohttp.ClientSession() as session,
    ):
        judge = Judge(LlamaClient(session, fake.url, node="node0", timeout=5.0))
        merged = await judges.score_reconcile(judge, reconcile)
        typed = await judges.score_types(judge, types)
    # Letter A is a duplicate of the first neighbour, and "fact" among the types.
    first_duplicates = [
        c for c in raw("reconcile.jsonl") if c["expected"] == {"kind": "duplicate", "neighbour": 0}
    ]
    facts = [c for c in raw("types.jsonl") if c["expected"] == "fact"]
    assert (merged.n, merged.correct, merged.undecided) == (
        len(reconcile),
        len(first_duplicates),
        0,
    )
    assert merged.accuracy == pytest.approx(len(first_duplicates) / len(reconcile))
    assert (typed.n, typed.correct, typed.undecided) == (len(types), len(facts), 0)
    assert typed.accuracy == pytest.approx(len(facts) / len(types))
    assert 0 < merged.accuracy < 0.5 and 0 < typed.accuracy < 0.5
    assert min(merged.ms + typed.ms) >= 5.0  # each call waited out the fake's latency


async def test_undecided_judgements_count_as_wrong_and_apart() -> None:
    async with FakeLlamaServer(host="127.0.31.6", chat=torn) as fake:
        line = await judges.run(fake.url, limit=4)
    assert fake.calls["chat"] == 9  # four and four, then the four types in one batch
    assert " reconcile n=4 accuracy=0.000 undecided=4 types n=4 accuracy=0.000 undecided=4 " in line
    assert " types_batched n=4 accuracy=0.000 undecided=4 " in line


async def test_the_module_runs_as_a_command() -> None:
    async with FakeLlamaServer(host="127.0.31.6", chat=knows_the_answers()) as fake:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.bench.judges", fake.url, "--limit", "3",
            cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(30):
            out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().startswith(f"judges url={fake.url} model=fake.gguf reconcile n=3 ")
    assert " types n=3 accuracy=1.000 undecided=0 " in out.decode()
    assert fake.calls["chat"] == 7


def test_an_unreachable_server_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    assert judges.main([f"http://127.0.0.1:{port}", "--timeout", "5"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "judges: node bench: GET /props" in captured.err
