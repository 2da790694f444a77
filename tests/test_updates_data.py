"""The labelled pairs of tests/data/updates.jsonl, and tests/bench/updates.py against the real daemon."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

from smemd.engine.ingest.sentence_facts import candidate_facts
from tests.bench import updates
from tests.bench.updates import Pair

FIELDS = {"old", "new", "label", "note"}
OPTIONAL = {"old_date", "new_date"}


def rows() -> list[dict[str, str]]:
    lines = updates.DATA.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_set_is_large_and_every_label_well_represented() -> None:
    found = rows()
    assert len(found) >= 100
    counts = Counter(r["label"] for r in found)
    assert set(counts) == set(updates.LABELS)
    assert min(counts.values()) >= 22, counts
    assert len(updates.load()) == len(found)


def test_each_row_has_its_fields_and_no_pair_repeats() -> None:
    seen: set[tuple[str, str]] = set()
    for row in rows():
        assert FIELDS <= set(row) <= FIELDS | OPTIONAL, row
        assert all(isinstance(v, str) and v.strip() == v and v for v in row.values()), row
        pair = (row["old"], row["new"])
        assert pair not in seen, pair
        seen.add(pair)


def test_dates_are_real_days_and_never_go_back() -> None:
    for row in rows():
        days = {k: date.fromisoformat(row[k]) for k in OPTIONAL if k in row}
        if len(days) == 2:
            assert days["old_date"] <= days["new_date"], row


def test_each_text_is_one_fact_to_the_sentence_extractor() -> None:
    for row in rows():
        for side in ("old", "new"):
            assert candidate_facts(row[side]) == [row[side]], (side, row)


def test_the_bench_reads_outcomes_that_are_certain_today() -> None:
    same = "Ravi plays the cello in a community orchestra."
    pairs = [
        Pair(old=same, new=same, label="duplicate"),
        Pair(
            old=same, new="The boiler in the basement needs a new pressure valve.", label="distinct"
        ),
        Pair(old="Mia adopted a grey kitten in May.", new="Hi!", label="distinct"),
        Pair(old="Thanks!", new=same, label="distinct"),
    ]
    outcomes = updates.run(pairs)
    assert outcomes == ["duplicate", "distinct", "unextracted", "unextracted"]
    line = updates.line(pairs, outcomes, "heuristic", 1.0)
    assert line == (
        "updates judge=heuristic n=4 accuracy=0.500 updates=- duplicate=1.000 extends=- "
        "distinct=0.333 unextracted=2 s=1.0"
    )
