"""Fits recall's fusion weights (smemd.engine.recall.scoring.Fusion) on evidence recall, and
checks the fit on conversations it did not see.

The signals of every candidate passage of every question are the real engine's, read from a
state that `tests.bench.retrieval --state-dir DIR` ingested (and its session, which lifts it by
the best other passage of its session: smemd.engine.recall.ordering); the weights are found by
coordinate ascent over a grid (the memory vector's weight held, as the scale) to the mean of
any@10, all@10 and MRR over each set's categories, each category of each set counting alike
whatever its number of questions. A passage counts once, for the turn it came from. One line
per set:

  fit_fusion SET code_any@10=… code_all@10=… code_mrr=… cv_any@10=… cv_all@10=… cv_mrr=…

`code_*` are the weights in the code, `cv_*` weights fitted with each conversation left out in
turn and scored on it (leave one conversation out: a gain only on the conversations a fit saw
is no gain), and a last line gives the weights fitted on every set, for the table in the code.

  python3 -m tests.bench.retrieval SET.json… --state-dir DIR   # ingests once
  python3 -m tests.bench.fit_fusion DIR SET.json… [OTHER.json@OTHER_DIR…]
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from smemd.config import EngineConfig
from smemd.engine.core import Engine
from smemd.engine.recall.ordering import lift_sessions
from smemd.engine.recall.query import Query
from smemd.engine.recall.scoring import SIGNALS, Fusion
from smemd.fleet.builtin import MiniLM
from smemd.store.opening import configured_store
from tests.bench.retrieval import Conversation, load

GRID = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8)
ROUNDS = 3
DEPTH = 20  # the turns of a question's ranking that are scored, as the bench's search limit


class Asked(NamedTuple):
    """One question: its set, conversation and category, its evidence, and each candidate
    passage's signals and turn."""

    set: str
    conversation: str
    category: int | str
    evidence: frozenset[str]
    signals: np.ndarray  # (passages, len(SIGNALS))
    turns: list[str | None]
    sessions: list[float | None]


async def gather(state: Path, sets: dict[str, list[Conversation]]) -> list[Asked]:
    engine = Engine(
        configured_store("sqlite", state), state, await asyncio.to_thread(MiniLM), EngineConfig()
    )
    await engine.store.open()
    asked: list[Asked] = []
    try:
        for name, conversations in sets.items():
            for conv in conversations:
                turns = await _turns_of_documents(engine, conv.name)
                for question in conv.questions:
                    query = Query(text=question.text, limit=DEPTH)
                    found = await engine.recall.passage_signals(conv.name, query)
                    asked.append(Asked(
                        name, conv.name, question.category, question.evidence,
                        np.array([c.signals for c in found]).reshape(-1, len(SIGNALS)),
                        [turns.get(_document_of(c.passage)) for c in found],
                        [c.session for c in found],
                    ))  # fmt: skip
    finally:
        await engine.store.close()
    return asked


async def _turns_of_documents(engine: Engine, namespace: str) -> dict[str, str]:
    turns: dict[str, str] = {}
    async with engine.store.scan(namespace) as reader:
        async for rows in reader.export_rows(namespace, "document", ["id", "metadata"]):
            turns.update((r["id"], r["metadata"].get("dia_id")) for r in rows)
    return turns


def _document_of(passage: object) -> str:
    chunk = getattr(passage, "chunk", None)
    if chunk is not None:
        return str(chunk.document_id)
    return str(passage.memories[0].document_id)  # type: ignore[attr-defined]


def scores(question: Asked, weights: np.ndarray) -> tuple[float, float, float]:
    """any@10, all@10 and reciprocal rank of one question under `weights` (SIGNALS', then the
    session's lift)."""
    based = question.signals @ weights[: len(SIGNALS)]
    lifted = np.array(lift_sessions(list(based), question.sessions, float(weights[-1])))
    ranked: list[str] = []
    for i in np.argsort(-lifted, kind="stable"):
        turn = question.turns[i]
        if turn is not None and turn not in ranked:
            ranked.append(turn)
            if len(ranked) == DEPTH:
                break
    top = set(ranked[:10])
    ranks = [ranked.index(e) + 1 for e in question.evidence if e in ranked]
    return (
        float(bool(question.evidence & top)),
        float(question.evidence <= top),
        1 / min(ranks) if ranks else 0.0,
    )


def by_set(questions: Iterable[Asked], weights: np.ndarray) -> dict[str, np.ndarray]:
    found: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for question in questions:
        found[question.set].append(scores(question, weights))
    return {name: np.mean(values, axis=0) for name, values in found.items()}


def objective(questions: list[Asked], weights: np.ndarray) -> float:
    """The mean over each set's categories of their mean any@10, all@10 and MRR: every kind of
    question of every set counts alike, so that no category pays for another's gain."""
    found: dict[tuple[str, int | str], list[tuple[float, float, float]]] = defaultdict(list)
    for question in questions:
        found[question.set, question.category].append(scores(question, weights))
    return float(np.mean([np.mean(values) for values in found.values()]))


def fit(questions: list[Asked], start: np.ndarray) -> np.ndarray:
    weights, best = start.copy(), objective(questions, start)
    for _ in range(ROUNDS):
        better = False
        for j in range(1, len(weights)):  # the memory vector's weight is the scale
            for value in GRID:
                trial = weights.copy()
                trial[j] = value
                if (found := objective(questions, trial)) > best + 1e-9:
                    weights, best, better = trial, found, True
        if not better:
            break
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path, help="a state dir `tests.bench.retrieval` kept")
    parser.add_argument(
        "paths", nargs="+", metavar="SET", help="a set, or SET@STATE: a set kept in another state"
    )
    args = parser.parse_args()
    by_state: dict[Path, dict[str, list[Conversation]]] = defaultdict(dict)
    for given in args.paths:
        path, _, state = given.partition("@")
        by_state[Path(state) if state else args.state][Path(path).stem] = load(Path(path))
    sets = {name: convs for held in by_state.values() for name, convs in held.items()}
    questions = [q for state, held in by_state.items() for q in asyncio.run(gather(state, held))]
    fusion = Fusion()
    code = np.array([*fusion.weights("hybrid"), fusion.session])
    held_out: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for conversation in sorted({q.conversation for q in questions}):
        weights = fit([q for q in questions if q.conversation != conversation], code)
        for question in questions:
            if question.conversation == conversation:
                held_out[question.set].append(scores(question, weights))
    in_code = by_set(questions, code)
    for name in sets:
        cv = np.mean(held_out[name], axis=0)
        print(
            f"fit_fusion {name} n={len(held_out[name])} "
            + " ".join(f"code_{k}={v:.3f}" for k, v in zip(("any@10", "all@10", "mrr"), in_code[name], strict=True))
            + " "
            + " ".join(f"cv_{k}={v:.3f}" for k, v in zip(("any@10", "all@10", "mrr"), cv, strict=True))
        )  # fmt: skip
    fitted = fit(questions, code)
    names = (*SIGNALS, "session")
    print(
        "fit_fusion weights " + " ".join(f"{s}={w:g}" for s, w in zip(names, fitted, strict=True))
    )


if __name__ == "__main__":
    main()
