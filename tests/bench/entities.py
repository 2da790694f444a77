"""The no-model entity finder against tests/data/entities.jsonl: precision, recall and F1 over
the names found (case-insensitive), micro-averaged over sentences; then alias suggestions
against tests/data/aliases.jsonl (tests/bench/aliases.py).

    python -m tests.bench.entities [--misses]
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from smemd.engine.entities.finder import find
from tests.bench import aliases

LABELLED = Path(__file__).parent.parent / "data" / "entities.jsonl"


@dataclass(frozen=True)
class Score:
    sentences: int
    precision: float
    recall: float
    f1: float
    wrong: list[str]  # what the finder got wrong, for --misses


def score(path: Path = LABELLED) -> Score:
    hits = found_total = expected_total = 0
    wrong = []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        expected = {name.lower() for name in row["entities"]}
        found = {f.name.lower() for f in find(row["text"])}
        hits += len(found & expected)
        found_total += len(found)
        expected_total += len(expected)
        if found != expected:
            wrong.append(
                f"{row['text']!r}: extra {sorted(found - expected)}, missed {sorted(expected - found)}"
            )
    precision = hits / found_total if found_total else 1.0
    recall = hits / expected_total if expected_total else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Score(len(rows), precision, recall, f1, wrong)


def main(argv: list[str]) -> int:
    result = score()
    print(
        f"entities sentences={result.sentences} precision={result.precision:.3f}"
        f" recall={result.recall:.3f} f1={result.f1:.3f}"
    )
    if "--misses" in argv:
        for line in result.wrong:
            print(line)
    return aliases.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
