"""The in-memory BM25 index: the scores SQLite's FTS5 gives, and the live rows only."""

from __future__ import annotations

import random

import pytest

from smemd.engine.index.bm25 import LexicalIndex
from smemd.engine.index.words import query_terms
from tests.raw_sqlite import connect

WORDS = """alex moved portland seattle running runs ran hiking trail coffee morning painted
painting sister brother dog cats adopted adoption guitar lessons lesson concert tickets camping
lake mountains bakery baking bread""".split()


def corpus(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(n)]


def fts5_scores(texts: list[str], query: str) -> dict[int, float]:
    with connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
        db.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", list(enumerate(texts, start=1)))
        match = " OR ".join(f'"{w}"' for w in query.split())
        rows = db.execute("SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?", [match]).fetchall()
    return {rowid: score for rowid, score in rows}


@pytest.mark.parametrize(
    "query", ["alex moved", "painting sister", "lessons", "camping lake bread"]
)
def test_scores_are_fts5s(query: str) -> None:
    texts = corpus(300)
    index = LexicalIndex()
    index.add(range(1, 301), texts, [True] * 300)
    ours = dict(index.search(query_terms(query), 300))
    theirs = fts5_scores(texts, query)
    assert ours.keys() == theirs.keys()
    for key, score in theirs.items():
        assert ours[key] == pytest.approx(score, rel=1e-4)


def test_stems_and_folds_alike_in_text_and_query() -> None:
    index = LexicalIndex()
    index.add([1, 2, 3], ["She was painting at the café", "He paints", "Nothing here"], [True] * 3)
    assert {key for key, _ in index.search(query_terms("painted"), 10)} == {1, 2}
    assert [key for key, _ in index.search(query_terms("cafe"), 10)] == [1]


def test_only_live_rows_unless_among_names_them() -> None:
    index = LexicalIndex()
    index.add([10, 11, 12], ["alex seattle", "alex portland", "alex lake"], [True, False, True])
    index.set_live(12, False)
    assert [key for key, _ in index.search(["alex"], 10)] == [10]
    assert sorted(key for key, _ in index.search(["alex"], 10, among={11, 12, 99})) == [11, 12]


def test_removed_rows_leave_the_statistics_and_the_results() -> None:
    texts = corpus(3000, seed=2)
    index = LexicalIndex()
    index.add(range(3000), texts, [True] * 3000)
    index.remove(range(0, 3000, 2))  # past half removed: the postings are rebuilt, rows compacted
    kept = list(range(1, 3000, 2))
    ours = dict(index.search(query_terms("guitar concert"), 3000))
    theirs = fts5_scores([texts[k] for k in kept], "guitar concert")
    assert {kept[rowid - 1] for rowid in theirs} == ours.keys()
    for rowid, score in theirs.items():
        assert ours[kept[rowid - 1]] == pytest.approx(score, rel=1e-4)
    index.add([5000], ["guitar concert guitar"], [True])
    assert index.search(["guitar"], 1)[0][0] == 5000


def test_many_adds_fold_into_the_compressed_postings() -> None:
    index = LexicalIndex()
    texts = corpus(6000, seed=3)
    for start in range(0, 6000, 500):
        index.add(range(start, start + 500), texts[start : start + 500], [True] * 500)
    theirs = fts5_scores(texts, "bakery")
    ours = dict(index.search(["bakeri"], 6000))
    assert {rowid - 1 for rowid in theirs} == ours.keys()
    assert len(index) == 6000
