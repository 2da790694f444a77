"""The flat vector index: nearest first, live mask, explicit candidates, removal and growth."""

from __future__ import annotations

import numpy as np

from smemd.engine.index.flat import FlatIndex, best_rows


def unit(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_matches_a_brute_force_ranking() -> None:
    rng = np.random.default_rng(1)
    vectors = unit(rng, 500)
    index = FlatIndex(8, capacity=16)  # grows several times
    index.add(list(range(1000, 1500)), vectors, [True] * 500)
    query = unit(rng, 1)[0]
    expected = np.argsort(-(vectors @ query))[:10] + 1000
    assert [k for k, _ in index.search(query, 10)] == expected.tolist()
    scores = [s for _, s in index.search(query, 10)]
    assert (
        scores == sorted(scores, reverse=True)
        and abs(scores[0] - float(vectors[expected[0] - 1000] @ query)) < 1e-5
    )


def test_live_mask_among_and_removal() -> None:
    rng = np.random.default_rng(2)
    vectors = unit(rng, 4)
    index = FlatIndex(8)
    index.add([1, 2, 3, 4], vectors, [True, True, False, True])
    query = vectors[2]
    assert 3 not in [k for k, _ in index.search(query, 4)]
    assert index.search(query, 1, among={3})[0][0] == 3  # explicit candidates ignore the mask
    index.set_live(3, True)
    assert index.search(query, 1)[0][0] == 3
    index.remove([3])
    assert 3 not in [k for k, _ in index.search(query, 4)] and len(index) == 3
    assert index.search(query, 2, among={3, 99}) == []
    missing, present = index.cosines(query, [3, 1])
    assert missing == 0.0 and abs(present - float(vectors[0] @ query)) < 1e-6


def test_compaction_keeps_what_remains() -> None:
    rng = np.random.default_rng(3)
    vectors = unit(rng, 3000)
    index = FlatIndex(8)
    index.add(list(range(3000)), vectors, [True] * 3000)
    index.remove(set(range(0, 3000, 3)) | set(range(1, 3000, 3)))  # two thirds: compacts
    assert len(index) == 1000
    query = vectors[2999]
    assert index.search(query, 1)[0][0] == 2999
    index.add([5000], vectors[:1], [True])
    assert index.search(vectors[0], 1)[0][0] == 5000


def embedding_like(rng: np.random.Generator, n: int, d: int = 384, rank: int = 48) -> np.ndarray:
    """Vectors whose variance sits in a few directions, as sentence embeddings' does."""
    weights = 1.0 / np.sqrt(np.arange(1, rank + 1))
    latent = rng.standard_normal((n, rank)) * weights
    mixing = np.linalg.qr(rng.standard_normal((d, rank)))[0].T
    noise = rng.standard_normal((n, d)) * 0.02
    v = (latent @ mixing + noise + 0.3 * rng.standard_normal(d) / np.sqrt(d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_past_the_exact_limit_the_reduced_first_pass_finds_the_exact_top() -> None:
    rng = np.random.default_rng(4)
    vectors = embedding_like(rng, 6000)
    live = rng.random(6000) > 0.1
    index = FlatIndex(384, exact_up_to=1000)
    index.add(list(range(6000)), vectors, live.tolist())
    queries = embedding_like(rng, 40)
    recalls = []
    for query in queries:
        exact = vectors @ query
        exact[~live] = -np.inf
        truth = set(np.argsort(-exact)[:40].tolist())
        found = index.search(query, 40)
        recalls.append(len(truth & {k for k, _ in found}) / 40)
        assert all(live[k] for k, _ in found)
        for key, score in found:
            assert abs(score - float(exact[key])) < 2e-3  # float16 at rest
    assert np.mean(recalls) >= 0.97


def test_rows_added_removed_and_compacted_after_the_fit_are_searched() -> None:
    rng = np.random.default_rng(5)
    vectors = embedding_like(rng, 3000)
    index = FlatIndex(384, exact_up_to=1000)
    index.add(list(range(3000)), vectors, [True] * 3000)
    index.search(vectors[0], 5)  # fits the reduction
    extra = embedding_like(rng, 1)
    index.add([9999], extra, [True])
    assert index.search(extra[0], 1)[0][0] == 9999
    index.remove(list(range(0, 2000)))  # compacts: the reduction is refitted
    assert index.search(vectors[2500], 1)[0][0] == 2500
    assert [k for k, _ in index.search(vectors[100], 3, among={100, 2500})] == [2500]


def test_best_rows_are_the_top_scores() -> None:
    rng = np.random.default_rng(6)
    scores = rng.standard_normal(50_000).astype(np.float32)
    scores[rng.random(50_000) < 0.2] = -np.inf
    for depth in (1, 40, 1000, 5000):
        expected = set(np.argsort(-scores, kind="stable")[:depth].tolist())
        assert set(best_rows(scores, depth).tolist()) == expected
    few = np.full(50_000, -np.inf, dtype=np.float32)
    few[:10] = 1.0  # fewer finite scores than asked for: the sample's cut-off finds too few
    assert set(best_rows(few, 100).tolist()) >= set(range(10))
