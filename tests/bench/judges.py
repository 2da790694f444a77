"""Judge accuracy on the labelled sets in tests/data, against the llama-server at URL.

Every reconciliation case (tests/data/reconcile.jsonl) goes through `reconcile_options` and every
typing case (tests/data/types.jsonl) through `type_options`, one question at a time, to the
letter-probability judge at its default threshold; then the typing cases again nine to a call,
as dreaming asks them. An undecided judgement counts as wrong (and is counted apart). Prints one
line: per judge the cases, accuracy and undecided, the median ms per judge call over both sets,
and for the batches the median ms per case.

    python -m tests.bench.judges http://127.0.0.1:8080 [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import aiohttp
import msgspec

from smemd.engine.dreaming.typer import TYPE_BATCH
from smemd.engine.judgement.letter_judge import Judge
from smemd.engine.judgement.questions import (
    Outcome,
    OutcomeKind,
    chosen_type,
    reconcile_options,
    type_batch,
    type_options,
)
from smemd.fleet.llama import LlamaClient, LlamaError
from smemd.store.records import MemoryType

DATA = Path(__file__).resolve().parents[1] / "data"
RECONCILE = DATA / "reconcile.jsonl"
TYPES = DATA / "types.jsonl"
T = TypeVar("T")


class Expected(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: OutcomeKind
    neighbour: int | None

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.kind, self.neighbour)


class ReconcileCase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    candidate: str
    neighbours: list[str]
    expected: Expected
    note: str


class TypeCase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    text: str
    expected: MemoryType
    note: str


def read_jsonl(path: Path, shape: type[T]) -> list[T]:
    """One case per non-blank line; a bad line raises ValueError naming it."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(msgspec.json.decode(line, type=shape))
        except msgspec.ValidationError as err:
            raise ValueError(f"{path.name}:{number}: {err}") from err
    return cases


def load_reconcile(path: Path = RECONCILE) -> list[ReconcileCase]:
    return read_jsonl(path, ReconcileCase)


def load_types(path: Path = TYPES) -> list[TypeCase]:
    return read_jsonl(path, TypeCase)


@dataclass
class Tally:
    """One judge's score: undecided answers count as wrong, and are counted apart."""

    n: int = 0
    correct: int = 0
    undecided: int = 0
    ms: list[float] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def add(self, right: bool, decided: bool, ms: float) -> None:
        self.n += 1
        self.correct += right
        self.undecided += not decided
        self.ms.append(ms)

    def summary(self) -> str:
        return f"n={self.n} accuracy={self.accuracy:.3f} undecided={self.undecided}"


async def score_reconcile(judge: Judge, cases: Sequence[ReconcileCase]) -> Tally:
    tally = Tally()
    for case in cases:
        question = reconcile_options(case.candidate, case.neighbours)
        started = time.perf_counter()
        outcome = question.outcome(await judge.decide(question.question))
        ms = (time.perf_counter() - started) * 1000
        tally.add(outcome == case.expected.outcome, outcome is not None, ms)
    return tally


async def score_types(judge: Judge, cases: Sequence[TypeCase]) -> Tally:
    tally = Tally()
    for case in cases:
        question = type_options(case.text)
        started = time.perf_counter()
        memory_type = chosen_type(await judge.decide(question))
        ms = (time.perf_counter() - started) * 1000
        tally.add(memory_type == case.expected, memory_type is not None, ms)
    return tally


async def score_type_batches(judge: Judge, cases: Sequence[TypeCase]) -> Tally:
    """The same cases as dreaming asks them: nine to a call (ms per case, not per call)."""
    tally = Tally()
    for start in range(0, len(cases), TYPE_BATCH):
        batch = cases[start : start + TYPE_BATCH]
        started = time.perf_counter()
        judgements = await judge.decide_batch(type_batch([case.text for case in batch]))
        ms = (time.perf_counter() - started) * 1000 / len(batch)
        for case, judgement in zip(batch, judgements, strict=True):
            memory_type = chosen_type(judgement)
            tally.add(memory_type == case.expected, memory_type is not None, ms)
    return tally


async def run(url: str, *, limit: int | None = None, call_timeout: float = 30.0) -> str:
    """Both sets (the first `limit` cases of each) through the judge at `url`: the one line."""
    reconcile, types = load_reconcile()[:limit], load_types()[:limit]
    async with aiohttp.ClientSession() as session:
        client = LlamaClient(session, url, node="bench", timeout=call_timeout)
        await client.props()  # names the model
        judge = Judge(client)
        merged = await score_reconcile(judge, reconcile)
        typed = await score_types(judge, types)
        batched = await score_type_batches(judge, types)
    p50 = statistics.median(merged.ms + typed.ms) if merged.n + typed.n else 0.0
    batch_p50 = statistics.median(batched.ms) if batched.n else 0.0
    return (
        f"judges url={url} model={client.name or '?'} reconcile {merged.summary()} "
        f"types {typed.summary()} p50_ms={p50:.1f} "
        f"types_batched {batched.summary()} per_case_ms={batch_p50:.1f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("url", help="a llama-server base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--limit", type=int, default=None, help="the first N cases of each set")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per judge call")
    args = parser.parse_args(argv)
    try:
        print(asyncio.run(run(args.url, limit=args.limit, call_timeout=args.timeout)))
    except LlamaError as err:
        print(f"judges: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
